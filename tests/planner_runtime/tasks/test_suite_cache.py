"""The built-in suite's cache: validated once per content; a changed file or a broken cache file
means validating again, never a stale or failed load."""

from __future__ import annotations

from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.tasks.suite_cache import cached


def test_a_cached_value_is_built_once_per_content_and_a_broken_cache_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_AGENT_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "suite.yaml"
    data.write_text("tasks: [a]\n")
    built: list[str] = []

    def build() -> dict:
        built.append(data.read_text())
        return {"tasks": data.read_text()}

    assert cached("t", [data], build) == cached("t", [data], build) == {"tasks": "tasks: [a]\n"}
    assert len(built) == 1
    data.write_text("tasks: [b]\n")  # a changed file: validated again
    assert cached("t", [data], build) == {"tasks": "tasks: [b]\n"} and len(built) == 2
    for stored in (tmp_path / "cache" / "suites").glob("t-*.pickle"):
        stored.write_bytes(b"not a pickle")
    assert cached("t", [data], build) == {"tasks": "tasks: [b]\n"} and len(built) == 3


def test_the_builtin_suite_from_the_cache_equals_a_fresh_validation(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_AGENT_CACHE_DIR", str(tmp_path / "cache"))
    fresh = builtin_suite()
    assert list((tmp_path / "cache" / "suites").glob("builtin-*.pickle"))
    assert builtin_suite() == fresh and len(fresh.tasks) >= 500
