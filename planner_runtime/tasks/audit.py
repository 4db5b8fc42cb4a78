"""Audit a suite: run a do-nothing planner on every task and flag the tasks that pass anyway.

A task whose checks hold before the planner acts measures nothing (its seed already satisfies
it, or its checks are too weak). Each task runs on the device it is given, seeded first, with a
planner that finishes at once. A task that cannot be seeded (an app it needs is missing, a
setup command fails) is reported as such and the audit goes on; a device fault ends it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ContextManager, Iterable

from device_farm.adb import AdbDevice
from device_farm.errors import DeviceError
from planner_runtime.contract import DeviceRef, FailureKind, Source, ToolCall, Verdict
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runner import run_goal
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories import TrajectoryStore

DeviceFactory = Callable[[], ContextManager[tuple[AdbDevice, DeviceRef, Source]]]


@dataclass(frozen=True)
class AuditResult:
    task_id: str
    verdict: Verdict | None  # None when the task could not be run (see ``error``)
    error: str | None = None
    device_fault: bool = False  # the task could not be run because the device failed

    @property
    def passes_without_acting(self) -> bool:
        return self.verdict is not None and self.verdict.success

    @property
    def ran(self) -> bool:
        """The do-nothing episode ran and its checks were read (not cut short by a fault)."""
        return self.verdict is not None and self.verdict.failure_kind not in (FailureKind.infra, FailureKind.spec)

    @property
    def infra(self) -> bool:
        """The device, not the task, was at fault (while seeding, acting or checking)."""
        return self.device_fault or (self.verdict is not None and self.verdict.failure_kind is FailureKind.infra)

    def to_json(self) -> dict:
        v = self.verdict
        return {"task": self.task_id, "passes_without_acting": self.passes_without_acting, "ran": self.ran,
                "score": v.score if v else None, "failure_kind": v.failure_kind.value if v and v.failure_kind else None,
                "error": self.error, "infra": self.infra}


def audit(tasks: Iterable[TaskSpec], open_device: DeviceFactory, store: TrajectoryStore) -> list[AuditResult]:
    """One do-nothing episode per task; the trajectories go to ``store`` like any other."""
    results = []
    for task in tasks:
        planner = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": ""})], release="audit-noop")
        try:
            with open_device() as (device, ref, source):
                traj = run_goal(task.rendered_goal(), device=device, device_ref=ref, source=source,
                                planner=planner, store=store, task=task, max_steps=1)
        except DeviceError as exc:
            results.append(AuditResult(task.id, None, error=str(exc), device_fault=exc.infra))
            if exc.infra:  # the phone is gone: the tasks after this one would only repeat it
                break
            continue
        assert traj.verdict is not None  # run_goal verifies every task
        results.append(AuditResult(task.id, traj.verdict))
    return results
