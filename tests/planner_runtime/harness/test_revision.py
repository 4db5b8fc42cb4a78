"""A harness revision folder replaces the instructions the planner reads (system prompt, tool
descriptions, skills), episodes record which revision they ran under, and a broken folder is
refused with the file and line."""

from __future__ import annotations

from planner_runtime import HARNESS_RELEASE
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.revision import load_revision
from planner_runtime.harness.revision.files import check_revision, export_current
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.set_alarm")
CALLS = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "done"}}]


def _run(device, device_ref, store):
    return run_goal(TASK.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(CALLS), store=store, task=TASK)


def test_an_exported_revision_reads_as_the_builtin_harness_until_edited(device, device_ref, store, tmp_path, monkeypatch):
    folder = export_current(tmp_path / "rev")
    assert check_revision(folder) == []
    builtin = _run(device, device_ref, store)
    assert store.get(builtin.id).harness_release == HARNESS_RELEASE

    (folder / "system_prompt.txt").write_text("You operate the phone. Be brief.\n", encoding="utf-8")
    described = (folder / "tool_descriptions.yaml").read_text(encoding="utf-8")
    marker = "Set an alarm; hour is 0-23 in 24-hour time."
    lines = [f"set_alarm: {marker}" if line.startswith("set_alarm:") else line for line in described.splitlines()]
    (folder / "tool_descriptions.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("PLANNER_AGENT_HARNESS_DIR", str(folder))

    revised = store.get(_run(device, device_ref, store).id)
    assert revised.verdict is not None and revised.verdict.success
    assert revised.harness_release == load_revision(folder).release != HARNESS_RELEASE
    system = revised.messages_at(0)[0].content
    assert system.startswith("You operate the phone. Be brief.")
    assert next(s.description for s in revised.tools if s.name == "set_alarm") == marker


def test_a_broken_revision_names_the_file_and_line(tmp_path):
    folder = tmp_path / "rev"
    folder.mkdir()
    (folder / "tool_descriptions.yaml").write_text("set_alarm: fine\nno_such_tool: text\n", encoding="utf-8")
    assert check_revision(folder) == [f"{folder / 'tool_descriptions.yaml'}: no_such_tool: no tool of that name"]
    (folder / "tool_descriptions.yaml").write_text("set_alarm: fine\nsend_message: ''\n", encoding="utf-8")
    assert check_revision(folder) == [f"{folder / 'tool_descriptions.yaml'}:2: send_message: the description must be non-empty text"]
    (folder / "tool_descriptions.yaml").write_text("", encoding="utf-8")
    (folder / "system_prompt.txt").write_text("  \n", encoding="utf-8")
    assert "empty" in check_revision(folder)[0]
    assert check_revision(tmp_path / "missing") == [f"harness revision {tmp_path / 'missing'}: no such folder"]
