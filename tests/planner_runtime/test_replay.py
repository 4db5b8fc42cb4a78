"""Replay on the virtual phone: recorded calls re-run and compared; re-planning from step k."""

from __future__ import annotations

from planner_runtime.contract import Source
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.replay import reexecute, replan
from planner_runtime.runner import run_goal
from planner_runtime.tasks.spec import builtin_suite
from tests.planner_runtime.test_end_to_end import _learn_switch

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.disable_alarm_gui")


def _record(device, device_ref, store, time_text):
    switch = _learn_switch(TASK, device, time_text)
    script = [
        "no call here",  # answered by the harness, nothing to re-run
        {"name": "open_app", "arguments": {"app": "Clock"}},
        {"name": "tap", "arguments": {"element": switch}},
        {"name": "finish", "arguments": {"answer": "done"}},
    ]
    return run_goal(TASK.rendered_goal(), device=device, device_ref=device_ref, source=Source.sandbox,
                    planner=ScriptedPlanner(script), store=store, task=TASK)


def test_reexecute_reproduces_a_recorded_episode(device, device_ref, store):
    traj = _record(device, device_ref, store, "6:15")
    assert traj.verdict.success
    report = reexecute(traj, device, TASK)
    assert report.steps_replayed == 3 and report.divergence is None
    assert report.verdict.success


def test_reexecute_reports_the_first_step_that_differs(device, device_ref, store):
    traj = _record(device, device_ref, store, "6:15")
    device.shell(["content", "delete", "--uri", "content://com.android.deskclock/alarms"])
    report = reexecute(traj, device, task=None)  # not re-seeded: the Clock screen has no alarms now
    assert report.divergence is not None
    assert (report.divergence.step, report.divergence.what) == (1, "screen")


def test_replan_from_a_step_with_another_planner_fixes_a_failure(device, device_ref, store):
    failed = _record(device, device_ref, store, "8:00")  # tapped the wrong alarm's switch
    assert not failed.verdict.success
    right = _learn_switch(TASK, device, "6:15")
    fixed = replan(
        failed, 2,
        planner=ScriptedPlanner([{"name": "tap", "arguments": {"element": right}}, {"name": "finish", "arguments": {"answer": "off"}}]),
        device=device, device_ref=device_ref, store=store, task=TASK,
    )
    assert fixed.id != failed.id and fixed.verdict.success
    assert fixed.steps[:2] == failed.steps[:2]  # the replayed prefix is kept as recorded
    assert [s.index for s in fixed.steps] == [0, 1, 2, 3]
    assert fixed.steps[2].messages == failed.steps[2].messages  # the new planner saw the same input
    assert store.get(failed.id).verdict.success is False  # the original is untouched
