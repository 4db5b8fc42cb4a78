"""Episode limits and recovery on the virtual phone: a transient device fault (one dropped adb
stream, injected by the phone's fault injector) is waited out, the screen is read again and the
call retried once — recorded in the step's feedback; a fault that persists ends the episode as
infra; the token limit ends it as truncated."""

from __future__ import annotations

from device_farm.errors import DeviceOffline
from device_farm.virtual.faults.plan import Trigger, TransportDrop
from planner_runtime.contract import ErrorCode, FailureKind, FeedbackStatus, TrajectoryStatus
from planner_runtime.harness.episode import Episode, EpisodeLimits
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import Tool, ToolContext, ToolSet
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task
from planner_runtime.harness.identity import EpisodeIdentity

SET_ALARM = {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}
FINISH = {"name": "finish", "arguments": {"answer": "Alarm set for 7:30"}}


def _run_alarm_task(device, device_ref, store, on_step):
    return run_goal(
        "Set an alarm for 7:30",
        device=device,
        identity=EpisodeIdentity(device=device_ref),
        planner=ScriptedPlanner([{"name": "read_screen", "arguments": {}}, SET_ALARM, FINISH]),
        store=store,
        task=find_task("clock.set_alarm"),
        on_step=on_step,
    )


def test_a_single_dropped_stream_is_retried_and_the_task_succeeds(virtual_phone, device, device_ref, store):
    def pull_the_cable_once(step):
        if step.index == 0:  # the next adb stream (set_alarm's `am start`) is cut mid-way
            virtual_phone.phone.inject(TransportDrop(services=("shell", "exec")))

    traj = _run_alarm_task(device, device_ref, store, pull_the_cable_once)

    assert [e.kind for e in virtual_phone.phone.fault_events()] == ["transport_drop"]
    assert traj.status is TrajectoryStatus.finished
    retried = traj.steps[1]
    assert retried.feedback.status is FeedbackStatus.ok, retried.feedback
    assert "retried once after a transient device fault" in retried.feedback.note
    assert "device_offline" in retried.feedback.note or "timeout" in retried.feedback.note
    assert '"note"' in traj.steps[2].messages[-1].content  # the planner was told too
    assert traj.verdict.success, traj.verdict  # one alarm: the retry did not make two
    assert [s.feedback.note for s in (traj.steps[0], traj.steps[2])] == ["", ""]


def test_a_fault_that_persists_ends_the_episode_as_infra(virtual_phone, device, device_ref, store):
    def break_every_stream(step):
        if step.index == 0:
            virtual_phone.phone.inject(TransportDrop(services=("shell", "exec"), trigger=Trigger(probability=1.0)))

    traj = _run_alarm_task(device, device_ref, store, break_every_stream)

    assert traj.status is TrajectoryStatus.infra_error
    assert len(traj.steps) == 2  # the failed call is kept as a step
    assert traj.steps[1].feedback.error.code in (ErrorCode.device_offline, ErrorCode.timeout)
    assert len(virtual_phone.phone.fault_events()) >= 2  # the call and its one retry both failed
    assert traj.verdict.failure_kind is FailureKind.infra
    assert store.get(traj.id).status is TrajectoryStatus.infra_error


def test_the_token_limit_truncates_the_episode(device, device_ref, store):
    tools, ctx = default_toolset(), ToolContext(device=device)
    episode = Episode(
        goal="Read the screen forever",
        planner=ScriptedPlanner([{"name": "read_screen", "arguments": {}}] * 12),
        tools=tools,
        ctx=ctx,
        store=store,
        identity=EpisodeIdentity(device=device_ref),
        limits=EpisodeLimits(max_steps=12, max_tokens=1500),
    )
    traj = episode.run()
    assert traj.status is TrajectoryStatus.truncated
    assert 1 < len(traj.steps) < 12
    spent = traj.usage.prompt_tokens + traj.usage.completion_tokens
    before_last = spent - traj.steps[-1].usage.prompt_tokens - traj.steps[-1].usage.completion_tokens
    assert before_last < 1500 <= spent  # it stopped at the first turn past the limit, not later


class _CallsThenDrops(Tool):
    """A tool that declares nothing, places a call (an effect the gate judges) and then meets a
    device fault: the call may have been placed, so the episode must not run it again."""

    name = "ring_and_drop"
    description = "Ring a number."
    runs = 0

    def run(self, ctx, args):
        type(self).runs += 1
        ctx.device.shell(["am", "start", "-a", "android.intent.action.CALL", "-d", "tel:5550100"])
        raise DeviceOffline("the stream dropped after the intent was sent")


def test_a_call_whose_sensitive_effect_was_allowed_is_not_run_again_after_a_fault(device, device_ref, store):
    tools = ToolSet([*default_toolset(), _CallsThenDrops()])
    ctx = ToolContext(device=device, gate=SafetyGate(policy=Policy(allow=frozenset({Sensitivity.call}))))
    episode = Episode(
        goal="Call 555-0100",
        planner=ScriptedPlanner([{"name": "ring_and_drop", "arguments": {}}, {"name": "finish", "arguments": {"answer": "called"}}]),
        tools=tools, ctx=ctx, store=store, identity=EpisodeIdentity(device=device_ref),
        limits=EpisodeLimits(max_steps=3, retry_wait=0.0),
    )
    traj = episode.run()
    assert _CallsThenDrops.runs == 1  # a harmless call would have been retried once
    first = traj.steps[0].feedback
    assert first.error.code is ErrorCode.action_failed and "not run again" in first.error.hint
    assert [record.allowed for record in ctx.gate.log] == [True]
