"""Skills: files parse with clear errors, checks catch broken references, selection respects
what the device offers, and composites run as one checked call on the virtual phone."""

from __future__ import annotations

import pytest

from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.errors import ConfigError
from planner_runtime.harness.skills import check_skill, load_skills, parse_skill, select, skills_prompt
from planner_runtime.harness.toolbox import episode_tool_names, toolset_for
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity

SUITE = {t.id: t for t in builtin_suite().tasks}
TOOLS = episode_tool_names()


def _write(tmp_path, name, text):
    path = tmp_path / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_builtin_skills_cover_each_app_and_pass_check():
    skills = load_skills()
    assert {a for s in skills for a in s.apps} >= {"Clock", "Contacts"}
    assert all(check_skill(s, TOOLS) == [] for s in skills)


def test_bad_front_matter_names_file_and_field(tmp_path):
    path = _write(tmp_path, "x", "---\nname: Bad Name\ndescription: d\n---\nbody\n")
    with pytest.raises(ConfigError) as info:
        parse_skill(path)
    assert str(path) in str(info.value) and "name" in str(info.value)
    with pytest.raises(ConfigError, match="front matter"):
        parse_skill(_write(tmp_path, "y", "no front matter"))


def test_check_finds_unknown_tools_and_undeclared_parameters(tmp_path):
    path = _write(tmp_path, "z", "---\nname: z\ndescription: d\ntools: [fly]\ncomposite:\n"
                  "  - tool: tap\n    arguments: {element: {text: '{who}'}}\n---\n")
    problems = check_skill(parse_skill(path), TOOLS)
    assert "unknown tool 'fly'" in problems and any("{who}" in p for p in problems)


def test_selection_needs_the_app_installed_and_ranks_by_goal():
    skills = load_skills()
    assert [s.name for s in select(skills, "Turn off my 6:15 alarm", tools=TOOLS, apps=["Clock", "Contacts"])] == ["clock-alarm-off"]
    assert select(skills, "Turn off my 6:15 alarm", tools=TOOLS, apps=["Contacts"]) == []
    assert select(skills, "Play some jazz", tools=TOOLS, apps=["Clock", "Contacts"]) == []
    chosen = select(skills, "What is Ada's phone number?", tools=TOOLS, apps=["Contacts"], budget_chars=10_000)
    assert "contacts-lookup" in [s.name for s in chosen]
    assert select(skills, "What is Ada's phone number?", tools=TOOLS, apps=["Contacts"], budget_chars=50) == []
    assert "skill_contacts_lookup(name)" in skills_prompt(chosen)


def test_episode_offers_the_chosen_skills_composites(device):
    tools, _, text = toolset_for("Turn off my 6:15 alarm", device)
    assert "skill_clock_alarm_off" in tools and tools.names()[-1] == "finish"
    assert "# Skills" in text and "Tap the switch on the row" in text
    spec = tools["skill_clock_alarm_off"].spec()
    assert spec.parameters["required"] == ["time"]


def test_composite_turns_the_alarm_off_and_is_safe_to_repeat(device, device_ref, store):
    task = SUITE["clock.disable_alarm_gui"]
    call = {"name": "skill_clock_alarm_off", "arguments": {"time": "6:15"}}
    traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner([call, {"name": "finish", "arguments": {"answer": "off"}}]), store=store, task=task)
    assert traj.steps[0].feedback.status is FeedbackStatus.ok, traj.steps[0].feedback
    assert traj.verdict.success, traj.verdict
    # a second run finds the switch already off: the tap is skipped, the check still holds
    tools, ctx, _ = toolset_for(task.rendered_goal(), device)
    again = tools.execute(ToolCall(**call), ctx)
    assert again.status is FeedbackStatus.ok and any("skipped tap" in s for s in again.result["steps"])
    assert device.shell(["content", "query", "--uri", "content://com.android.deskclock/alarms", "--where", "hour=6"]).output.count("enabled=0") == 1


def test_composite_failure_names_the_step(device):
    seed(SUITE["clock.disable_alarm_gui"], device)
    tools, ctx, _ = toolset_for("Turn off my alarm", device)
    fb = tools.execute(ToolCall(name="skill_clock_alarm_off", arguments={"time": "9:45"}), ctx)
    assert fb.status is FeedbackStatus.error and fb.error.code is ErrorCode.action_failed
    assert fb.error.hint.startswith("step 3: expected") and "open_app" in fb.error.hint


def test_skills_task_lookup_number_with_the_composite(device, device_ref, store):
    task = SUITE["contacts.lookup_number"]
    script = [
        {"name": "skill_contacts_lookup", "arguments": {"name": "Grace Hopper"}},
        {"name": "finish", "arguments": {"answer": "Grace Hopper's number is +1 555 0199"}},
    ]
    traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=task)
    assert "+1 555 0199" in traj.steps[0].feedback.observation.screen  # the composite ends on the details
    assert "skill_contacts_lookup" in traj.steps[0].messages[0].content  # offered in the system prompt
    assert traj.verdict.success, traj.verdict
