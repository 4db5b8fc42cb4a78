"""Recorded episodes for training tests: scripted runs of ``clock.set_alarm`` on the virtual phone."""

from __future__ import annotations

from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.set_alarm")
GOOD = [
    {"name": "set_alarm", "arguments": {"hour": "7", "minutes": 30}},  # invalid: an error turn, masked
    {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
    {"name": "finish", "arguments": {"answer": "done"}},
]
BAD = [{"name": "set_alarm", "arguments": {"hour": 8, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "done"}}]


def record(store, device, device_ref, script, *, collection: str | None = None):  # noqa: ANN001, ANN201 - a Trajectory
    """Run ``script`` as the planner of ``clock.set_alarm``, stored and verified."""
    identity = EpisodeIdentity(device=device_ref, collection=collection)
    return run_goal(TASK.rendered_goal(), device=device, identity=identity, planner=ScriptedPlanner(script), store=store, task=TASK)
