"""Verifier: judge a finished episode by reading the phone's end state through adb.

Checks never look inside the phone's implementation: content providers are read with
``content query`` exactly as on a real phone. A device fault during the episode or the check
gives ``failure_kind=infra``; a check that cannot run because the spec is wrong gives ``spec``.
"""

from __future__ import annotations

from device_farm import Device
from device_farm.android import content_query
from device_farm.errors import DeviceError
from planner_runtime.contract import Check, FailureKind, Trajectory, TrajectoryStatus, Verdict
from planner_runtime.tasks.spec import CheckSpec, TaskSpec


def _run_check(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    if spec.content is not None:
        c = spec.content
        uri, where = task.render(c.uri), task.render(c.where) if c.where else None
        rows = content_query(device, uri, where=where)
        ok = len(rows) >= c.min and (c.max is None or len(rows) <= c.max)
        bound = f"{c.min}..{c.max if c.max is not None else '∞'}"
        shown = "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in rows[:3])
        evidence = f"{len(rows)} row(s) in {uri}" + (f" where {where}" if where else "") + f" (want {bound})"
        return Check(name=spec.name or f"content {uri}", passed=ok, evidence=evidence + (f": {shown}" if shown else ""))
    expected = task.render(spec.answer_contains or "")
    answer = trajectory.answer or ""
    return Check(
        name=spec.name or f"answer contains {expected!r}",
        passed=expected.lower() in answer.lower(),
        evidence=f"answer: {answer[:200]!r}",
    )


def verify(task: TaskSpec, device: Device, trajectory: Trajectory) -> Verdict:
    """Run every check of ``task`` against the device after ``trajectory`` ended."""
    if trajectory.status is TrajectoryStatus.infra_error:
        return Verdict(
            success=False,
            score=0.0,
            checks=(Check(name="episode ran", passed=False, evidence="the device failed during the episode"),),
            failure_kind=FailureKind.infra,
        )
    checks: list[Check] = []
    for spec in task.checks:
        try:
            checks.append(_run_check(task, spec, device, trajectory))
        except DeviceError as exc:
            kind = FailureKind.infra if exc.infra else FailureKind.spec
            checks.append(Check(name=spec.name or spec.kind, passed=False, evidence=f"check could not run: {exc}"))
            return Verdict(success=False, score=0.0, checks=tuple(checks), failure_kind=kind)
    passed = sum(c.passed for c in checks)
    success = passed == len(checks)
    return Verdict(
        success=success,
        score=passed / len(checks),
        checks=tuple(checks),
        failure_kind=None if success else FailureKind.agent,
    )
