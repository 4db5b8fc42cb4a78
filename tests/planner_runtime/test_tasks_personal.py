"""Every task of the `personal` suite solved end to end by a scripted planner on the virtual
phone (seeded, run through the real adb server, verified through adb), and one wrong
solution per app judged failed."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Source
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runner import run_goal
from planner_runtime.tasks.spec import builtin_suite

SUITE = {t.id: t for t in builtin_suite("personal").tasks}
ALLOW_ALL = SafetyGate(policy=Policy(allow=frozenset(Sensitivity)))


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def done(answer: str = "Done") -> dict:
    return call("finish", answer=answer)


SOLUTIONS: dict[str, list[dict]] = {
    "settings.wifi_off": [call("toggle_setting", setting="wifi", on=False), done("Wi-Fi is off")],
    "settings.dnd_on": [call("toggle_setting", setting="do_not_disturb", on=True), done()],
    "settings.brightness_half": [call("set_brightness", percent=50), done()],
    "settings.bluetooth_on_gui": [call("toggle_setting", setting="bluetooth", on=True), done()],
    "settings.location_off_confirmed": [call("ask_user", question="Turn location off?"),
                                        call("set_location", on=False), done()],
    "memory.settings_usual_brightness": [call("set_brightness", percent=30), done()],
}

WRONG: dict[str, list[dict]] = {
    "settings.wifi_off": [call("toggle_setting", setting="airplane_mode", on=True), done()],
}


def _run(task_id: str, script: list[dict], device, device_ref, store):
    task = SUITE[task_id]
    return run_goal(task.rendered_goal(), device=device, device_ref=device_ref, source=Source.sandbox,
                    planner=ScriptedPlanner(script), store=store, task=task, gate=ALLOW_ALL)


def test_every_personal_task_has_a_solution():
    assert set(SOLUTIONS) == set(SUITE)


@pytest.mark.parametrize("task_id", sorted(SOLUTIONS))
def test_scripted_solution_succeeds(task_id, device, device_ref, store):
    traj = _run(task_id, SOLUTIONS[task_id], device, device_ref, store)
    assert traj.verdict.success, [(c.name, c.evidence) for c in traj.verdict.checks if not c.passed]


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_wrong_solution_fails(task_id, device, device_ref, store):
    traj = _run(task_id, WRONG[task_id], device, device_ref, store)
    assert not traj.verdict.success
