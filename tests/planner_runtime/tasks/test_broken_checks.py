"""A check that cannot run because the task is wrong is the task's failure (``spec``), never the
planner's nor the device's: on a real virtual phone, through adb, after a real episode."""

from __future__ import annotations

import pytest

from planner_runtime.contract import FailureKind, Source
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import Suite

BROKEN = {  # a check the task wrote wrongly → what the evidence must name
    "missing table": ({"content": {"uri": "content://com.android.contacts/no_such_table"}}, "Unknown URI"),
    "missing column": ({"content": {"uri": "content://com.android.contacts/contacts", "where": "no_such_column = 1"}}, "no such column"),
    "missing app": ({"content": {"uri": "content://com.example.uninstalled/items"}}, "Unknown authority"),
    "where that errors": ({"content": {"uri": "content://com.android.contacts/contacts", "where": "display_name LIKE"}}, "syntax error"),
    "setting key settings refuses": ({"setting": {"namespace": "system", "key": "--user", "equals": 1}}, "settings get system --user was refused"),
    "folder read as a file": ({"file": {"path": "/sdcard", "contains": "x"}}, "Is a directory"),
}


@pytest.mark.parametrize("check,named", BROKEN.values(), ids=BROKEN.keys())
def test_a_check_the_task_wrote_wrongly_fails_the_task_not_the_planner(check, named, device, device_ref, store):
    task = Suite.model_validate({"tasks": [{"id": "t.broken", "goal": "Do nothing", "domain": "contacts",
                                            "checks": [{"answer_contains": "done"}, check]}]}).tasks[0]
    traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox),
                    planner=ScriptedPlanner([{"name": "finish", "arguments": {"answer": "done"}}]), store=store, task=task)
    verdict = store.get(traj.id).verdict
    assert not verdict.success and verdict.failure_kind is FailureKind.spec, verdict
    assert verdict.checks[0].passed  # the planner did its part
    assert verdict.checks[-1].evidence.startswith("check could not run") and named in verdict.checks[-1].evidence
