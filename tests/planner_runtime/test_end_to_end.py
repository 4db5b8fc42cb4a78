"""End to end through the real adb server, adbutils and the uiautomator2 protocol on the
virtual phone: the scripted planner completes every skeleton task, the verifier reads the end
state through adb, and planner mistakes become feedback instead of exceptions."""

from __future__ import annotations

import pytest

from device_farm.android import launch_app
from device_farm.hierarchy import Screen
from planner_runtime.contract import ErrorCode, FailureKind, FeedbackStatus, TrajectoryStatus
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity

SUITE = {t.id: t for t in builtin_suite().tasks}


def _run(task, script, device, device_ref, store, **kw):
    return run_goal(
        task.rendered_goal(),
        device=device,
        identity=EpisodeIdentity(device=device_ref),
        planner=ScriptedPlanner(script),
        store=store,
        task=task,
        **kw,
    )


def _switch_for(screen: Screen, time_text: str) -> int:
    """Id of the on/off switch in the alarm row showing ``time_text``."""
    label = next(e for e in screen.elements if e.text.startswith(time_text))
    switches = [e for e in screen.elements if e.role == "Switch"]
    return min(switches, key=lambda s: abs(s.bounds.center[1] - label.bounds.center[1])).id


def _learn_switch(task, device, time_text: str) -> int:
    """Seed ``task``, read the Clock screen as the planner would, find a row's switch, go home."""
    seed(task, device)
    launch_app(device, "com.google.android.deskclock")
    switch = _switch_for(device.observe(), time_text)
    device.press("home")
    return switch


def test_set_alarm_task_succeeds(device, device_ref, store):
    traj = _run(
        SUITE["clock.set_alarm"],
        [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "Alarm set for 7:30"}}],
        device, device_ref, store,
    )
    assert traj.status is TrajectoryStatus.finished and traj.answer == "Alarm set for 7:30"
    assert traj.verdict.success and traj.verdict.score == 1.0
    assert "hour=7" in traj.verdict.checks[0].evidence
    assert store.get(traj.id) == traj  # what the caller got is what was stored
    assert {"set_alarm", "tap", "finish"} <= {t.name for t in traj.tools}  # the offered tools are kept


def test_add_contact_task_succeeds(device, device_ref, store):
    task = SUITE["contacts.add_contact"]
    traj = _run(
        task,
        [{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}, {"name": "finish", "arguments": {"answer": "saved"}}],
        device, device_ref, store,
    )
    assert traj.steps[0].feedback.status is FeedbackStatus.ok, traj.steps[0].feedback
    assert traj.verdict.success, traj.verdict


def test_disable_alarm_through_the_gui_succeeds(device, device_ref, store):
    task = SUITE["clock.disable_alarm_gui"]
    switch = _learn_switch(task, device, "6:15")
    traj = _run(
        task,
        [
            {"name": "open_app", "arguments": {"app": "Clock"}},
            {"name": "tap", "arguments": {"element": switch}},
            {"name": "finish", "arguments": {"answer": "Turned off"}},
        ],
        device, device_ref, store,
    )
    assert [s.feedback.status for s in traj.steps] == [FeedbackStatus.ok] * 3
    assert "6:15" in traj.steps[0].feedback.observation.screen
    assert traj.steps[0].feedback.observation.changes.startswith("app changed:")
    assert "~ " in traj.steps[1].feedback.observation.changes and "Switch" in traj.steps[1].feedback.observation.changes
    assert "Changes:" in traj.steps[2].messages[-1].content  # the planner was told what its tap did
    assert traj.verdict.success, traj.verdict


def test_verifier_says_failed_when_the_state_is_wrong(device, device_ref, store):
    traj = _run(
        SUITE["clock.set_alarm"],
        [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 31}}, {"name": "finish", "arguments": {"answer": "done"}}],
        device, device_ref, store,
    )
    assert traj.status is TrajectoryStatus.finished
    assert not traj.verdict.success and traj.verdict.failure_kind is FailureKind.agent
    assert not traj.verdict.checks[0].passed and "0 row(s)" in traj.verdict.checks[0].evidence
    assert traj.verdict.checks[1].passed  # still only one alarm
    assert traj.verdict.score == 0.5


def test_gui_task_fails_when_the_wrong_switch_is_tapped(device, device_ref, store):
    task = SUITE["clock.disable_alarm_gui"]
    wrong = _learn_switch(task, device, "8:00")
    traj = _run(task, [{"name": "open_app", "arguments": {"app": "Clock"}}, {"name": "tap", "arguments": {"element": wrong}}], device, device_ref, store)
    assert not traj.verdict.success
    assert [c.passed for c in traj.verdict.checks] == [False, False, True]


def test_model_mistakes_become_feedback_and_the_episode_goes_on(device, device_ref, store):
    script = [
        "I think I should set an alarm.",  # prose, no call
        '<tool_call>\n{"name": "set_alarm", "arguments": {"hour": 7, ',  # truncated JSON
        {"name": "launch_rocket", "arguments": {}},  # unknown tool
        {"name": "set_alarm", "arguments": {"hour": "seven", "minutes": 30}},  # wrong type
        {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 75}},  # out of range
        {"name": "tap", "arguments": {"element": 999}},  # no such element
        {"name": "open_app", "arguments": {"app": "Teleporter"}},  # app not installed
        '<tool_call>{"name": "home", "arguments": {}}</tool_call><tool_call>{"name": "back", "arguments": {}}</tool_call>',
        {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
        {"name": "finish", "arguments": {"answer": "done"}},
    ]
    traj = _run(SUITE["clock.set_alarm"], script, device, device_ref, store, max_steps=12)
    codes = [s.feedback.error.code if s.feedback.error else None for s in traj.steps]
    assert codes == [
        ErrorCode.no_tool_call,
        ErrorCode.malformed_output,
        ErrorCode.unknown_tool,
        ErrorCode.invalid_arguments,
        ErrorCode.invalid_arguments,
        ErrorCode.element_not_found,
        ErrorCode.app_not_installed,
        ErrorCode.too_many_calls,
        None,
        None,
    ]
    assert all(s.feedback.error.hint for s in traj.steps[:8])
    assert traj.status is TrajectoryStatus.finished and traj.verdict.success
    # the planner saw each error: the next turn's input holds the feedback
    assert "unknown_tool" in traj.steps[3].messages[-1].content


def test_step_limit_truncates_and_keeps_the_trajectory(device, device_ref, store):
    traj = _run(SUITE["clock.set_alarm"], [{"name": "read_screen", "arguments": {}}] * 10, device, device_ref, store)
    assert traj.status is TrajectoryStatus.truncated
    assert len(traj.steps) == SUITE["clock.set_alarm"].max_steps
    assert not traj.verdict.success and traj.verdict.failure_kind is FailureKind.agent


def test_dropped_device_is_an_infra_fault_and_the_trajectory_is_kept(virtual_phone, device, device_ref, store):
    task = SUITE["clock.set_alarm"]

    def drop_after_first(step):
        if step.index == 0:
            virtual_phone.phone.stop()

    traj = run_goal(
        task.rendered_goal(),
        device=device,
        identity=EpisodeIdentity(device=device_ref),
        planner=ScriptedPlanner([{"name": "read_screen", "arguments": {}}, {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}]),
        store=store,
        on_step=drop_after_first,
    )
    assert traj.status is TrajectoryStatus.infra_error
    assert len(traj.steps) == 2 and traj.steps[1].feedback.error.code in (ErrorCode.device_offline, ErrorCode.ui_server_down, ErrorCode.timeout)
    assert store.get(traj.id).status is TrajectoryStatus.infra_error


@pytest.mark.parametrize("text", ["He said \"hi\"; rm -rf / && echo $HOME `id` 'q'", "Zoë 李雷 🙂", "line1\nline2"])
def test_typed_text_arrives_exactly(device, device_ref, store, text):
    from planner_runtime.harness.toolbox import default_toolset
    from planner_runtime.harness.tools import ToolContext
    from planner_runtime.contract import ToolCall

    tools, ctx = default_toolset(), ToolContext(device=device)
    device.shell(["am", "start", "-a", "android.intent.action.INSERT", "-t", "vnd.android.cursor.dir/contact"])
    field = next(e for e in ctx.observe().elements if e.editable)
    fb = tools.execute(ToolCall(name="type_text", arguments={"element": field.id, "text": text}), ctx)
    assert fb.status is FeedbackStatus.ok, fb
    assert ctx.screen.element(field.id).text == text


def test_repeating_an_app_call_that_just_succeeded_is_stopped(device, device_ref, store):
    alarm = {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}
    traj = _run(SUITE["clock.set_alarm"], [alarm, alarm, alarm, {"name": "finish", "arguments": {"answer": "done"}}], device, device_ref, store)
    codes = [s.feedback.error.code if s.feedback.error else None for s in traj.steps]
    assert codes == [None, ErrorCode.repeated_action, ErrorCode.repeated_action, None]
    assert traj.steps[1].feedback.result is None and "just succeeded" in traj.steps[1].feedback.error.hint
    # Clock reuses an identical alarm (as AOSP DeskClock does), so the task still holds
    assert traj.verdict.success


def test_open_app_then_home_and_back_tools_change_the_screen(device):
    from planner_runtime.contract import ToolCall
    from planner_runtime.harness.toolbox import default_toolset
    from planner_runtime.harness.tools import ToolContext

    tools, ctx = default_toolset(), ToolContext(device=device)
    opened = tools.execute(ToolCall(name="open_app", arguments={"app": "clock"}), ctx)
    assert opened.observation.package == "com.google.android.deskclock"
    home = tools.execute(ToolCall(name="home", arguments={}), ctx)
    assert home.status is FeedbackStatus.ok and home.observation.package != "com.google.android.deskclock"
    assert "Clock" in home.observation.screen  # the launcher shows its icon
    tools.execute(ToolCall(name="open_app", arguments={"app": "Contacts"}), ctx)
    back = tools.execute(ToolCall(name="back", arguments={}), ctx)
    assert back.observation.package != "com.google.android.contacts"
