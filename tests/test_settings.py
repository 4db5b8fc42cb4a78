"""Settings: every environment variable the product reads is read in planner_runtime/config.py.

A variable read somewhere else is one the settings cannot document, validate or warn about
(``unknown_variables`` would call it a typo), so the tree is walked for reads of the environment
outside the settings module. ``device_farm`` reads no variable at all: it never imports
``planner_runtime``, and its one use of the environment hands it on to a child process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from planner_runtime.config import Settings, known_variables
from planner_runtime.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_MODULES = {"planner_runtime/config.py"}
# Uses of the environment that read no variable, with the reason; an entry nothing matches fails.
PASSED_ON = {
    "device_farm/adb/server.py": "starts the adb server with this process's environment, HOME replaced",
}
_ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _environment_uses(path: Path) -> list[str]:
    """``line: source`` of each ``os.environ`` / ``os.getenv`` / ``from os import environ`` in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    uses = []
    for node in ast.walk(tree):
        hit = (isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES and isinstance(node.value, ast.Name)
               and node.value.id == "os") or (isinstance(node, ast.ImportFrom) and node.module == "os"
                                              and any(a.name in _ENV_NAMES for a in node.names))
        if hit:
            uses.append(f"{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(uses), key=lambda use: int(use.split(":")[0]))


def test_no_module_but_the_settings_module_reads_the_environment():
    found = {}
    for package in ("planner_runtime", "device_farm"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in SETTINGS_MODULES and (uses := _environment_uses(path)):
                found[rel] = uses
    unexplained = {rel: uses for rel, uses in found.items() if rel not in PASSED_ON}
    assert not unexplained, "read the environment outside planner_runtime/config.py (make it a Settings field):\n" + "\n".join(
        f"  {rel}:{use}" for rel, uses in unexplained.items() for use in uses)
    assert set(PASSED_ON) <= set(found), f"stale entries in PASSED_ON: {sorted(set(PASSED_ON) - set(found))}"


def test_every_setting_documents_its_variable():
    for name, field in Settings.model_fields.items():
        assert field.description and Settings.variable(name) in field.description, name
    assert len(known_variables()) == len(Settings.model_fields) == len(set(known_variables()))


def test_one_setting_is_read_without_failing_on_another_variables_mistake(tmp_path):
    env = {"PLANNER_AGENT_MAX_STEPS": "0", "PLANNER_AGENT_CACHE_DIR": str(tmp_path / "cache"),
           "PLANNER_AGENT_THREADS": "3", "PLANNER_AGENT_SKILLS_DIR": " "}
    assert Settings.read("cache_dir", env) == tmp_path / "cache"
    assert Settings.read("threads", env) == 3
    assert Settings.read("skills_dir", env) is None  # blank: unset, as `VAR= planner-agent ...` means
    assert Settings.read("model_gguf", env) is None
    with pytest.raises(ConfigError, match=r"PLANNER_AGENT_MAX_STEPS='0'"):
        Settings.from_env(env)


def test_a_blank_thread_count_means_the_default_everywhere():
    # The model treated a blank PLANNER_AGENT_THREADS as unset; the CLI's start-up check must agree.
    assert Settings.from_env({"PLANNER_AGENT_THREADS": " "}).threads is None
    with pytest.raises(ConfigError, match=r"PLANNER_AGENT_THREADS='two': expected a positive whole number"):
        Settings.from_env({"PLANNER_AGENT_THREADS": "two"})
