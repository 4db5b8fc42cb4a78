"""Audit a suite: run a do-nothing planner on every task and flag the tasks that pass anyway.

A task whose checks hold before the planner acts measures nothing (its seed already satisfies
it, or its checks are too weak). Each task runs on the device it is given, seeded first, with a
planner that finishes at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ContextManager, Iterable

from device_farm.adb import AdbDevice
from planner_runtime.contract import DeviceRef, Source, ToolCall, Verdict
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runner import run_goal
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories import TrajectoryStore

DeviceFactory = Callable[[], ContextManager[tuple[AdbDevice, DeviceRef, Source]]]


@dataclass(frozen=True)
class AuditResult:
    task_id: str
    verdict: Verdict

    @property
    def passes_without_acting(self) -> bool:
        return self.verdict.success


def audit(tasks: Iterable[TaskSpec], open_device: DeviceFactory, store: TrajectoryStore) -> list[AuditResult]:
    """One do-nothing episode per task; the trajectories go to ``store`` like any other."""
    results = []
    for task in tasks:
        planner = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": ""})], release="audit-noop")
        with open_device() as (device, ref, source):
            traj = run_goal(task.rendered_goal(), device=device, device_ref=ref, source=source,
                            planner=planner, store=store, task=task, max_steps=1)
        assert traj.verdict is not None  # run_goal verifies every task
        results.append(AuditResult(task.id, traj.verdict))
    return results
