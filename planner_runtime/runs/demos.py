"""Play tasks' demos on the sandbox and find the ones their own verifier does not pass.

A demo is training data, never a verdict: :func:`check_demos` runs each task's demo as a
collection does (:func:`~planner_runtime.runs.collect.collect`, on a pool of phones, infra faults
retried elsewhere) and the task's checks judge the episode. A demo that fails them is a broken
reference solution: :func:`failed_demos` names each one with the first check it failed, and
because SFT data is drawn from verified episodes only, its trajectory never becomes training data.

A task with random parameters is played once per seed (``<template>@<seed>``), each instance
with the values drawn for it, so a demo templated with those values is checked on every draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from device_farm.pool.pool import DevicePool
from planner_runtime.contract import ToolCall, Trajectory
from planner_runtime.harness.safety import Policy, Sensitivity
from planner_runtime.planners import Planner
from planner_runtime.planners.demo import DemoPlanner
from planner_runtime.runs.collect import Progress, collect
from planner_runtime.tasks.detours import detour
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

# A demo is the task's own solution: the sensitive actions it takes are the ones the task asks
# for, and it plays on a sandbox phone.
DEMO_POLICY = Policy(allow=frozenset(Sensitivity))


def demo_planner(task: TaskSpec) -> Planner:
    """The planner that plays ``task``'s demo (``task`` drawn, so it has its random values)."""
    return DemoPlanner(task.rendered_demo())


def detour_planner(task: TaskSpec) -> Planner:
    """The planner that plays ``task``'s demo after its detour (the plain demo when it has none)."""
    return DemoPlanner(task.rendered_demo(), detour=task_detour(task), release="demo+detour")


def task_detour(task: TaskSpec) -> ToolCall | None:
    """``task``'s detour (:func:`~planner_runtime.tasks.detours.detour`); a template with random
    parameters is judged on its seed-0 draw."""
    drawn = task.draw(0) if task.random else task
    return detour(drawn.rendered_demo(), drawn.rendered_goal(), drawn.values) if drawn.demo else None


def instances(tasks: Sequence[TaskSpec], seeds: int) -> list[TaskSpec]:
    """The tasks that have a demo, each random template drawn with seeds ``0..seeds-1``."""
    return [drawn for t in tasks if t.demo for drawn in ([t.draw(s) for s in range(seeds)] if t.random else [t])]


@dataclass(frozen=True)
class DemoFailure:
    """A demo its task's verifier did not pass: the instance, its trajectory and why."""

    task_id: str
    trajectory_id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"task": self.task_id, "trajectory": self.trajectory_id, "reason": self.reason}


def _reason(traj: Trajectory) -> str:
    failed = [c for c in (traj.verdict.checks if traj.verdict else ()) if not c.passed]
    if failed:
        return f"check {failed[0].name!r} failed: {failed[0].evidence}".rstrip(": ")
    refused = next((s for s in traj.steps if s.feedback.error is not None), None)
    if refused is not None and refused.tool_call is not None:
        return f"{refused.tool_call.name} was refused: {refused.feedback.error.hint}"
    return f"the episode ended {traj.status.value}"


def failed_demos(store: TrajectoryStore, collection: str) -> list[DemoFailure]:
    """The episodes of ``collection`` whose verdict failed (infra faults are not the demo's),
    each task's newest, in task order."""
    found: dict[str, DemoFailure] = {}
    for trajectory_id in store.ids(collection=collection, success=False, infra=False):
        traj = store.get(trajectory_id)
        if traj.parent is None and traj.task_id is not None:
            found[traj.task_id] = DemoFailure(traj.task_id, traj.id, _reason(traj))
    return [found[k] for k in sorted(found)]


def check_demos(
    tasks: Sequence[TaskSpec],
    *,
    pool: DevicePool,
    store: TrajectoryStore,
    workers: int,
    seeds: int = 1,
    collection: str | None = None,
    on_change: Callable[[Progress], None] | None = None,
) -> tuple[str, Progress, list[DemoFailure]]:
    """Play the demo of every task that has one (random ones once per seed) over ``pool``;
    returns (collection id, counts, the demos that failed their verifier)."""
    chosen = instances(tasks, seeds)
    collection, progress = collect(chosen, pool=pool, store=store, planner_for=demo_planner, workers=workers,
                                   collection=collection, policy=DEMO_POLICY, on_change=on_change)
    return collection, progress, failed_demos(store, collection)
