"""One attempt at one work item of a collection: lease a phone, restore it, run the task, judge the fault.

A collection's items (``<task id>#<repeat>``) all run the same way wherever they run: in a
worker thread of :func:`~planner_runtime.runs.collect.collect`, or on a device host of a Ray
cluster (:mod:`planner_runtime.runs.distributed`). :func:`run_attempt` is that way, written once:
the lease, the refusal of phones seeding would wrongly wipe, the restore to a clean state, the
episode (:func:`~planner_runtime.runs.run.run_goal`, its trajectory written to the given store as
it goes), and whether an infra fault was the device's (then the pool hears of it, so the retry
goes elsewhere). What to do with the outcome (settle, retry, give up) is the caller's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Sequence

from device_farm import Device
from device_farm.errors import DeviceError
from device_farm.pool.pool import DevicePool
from device_farm.sources import DeviceCandidate
from planner_runtime.contract import DeviceRef, FailureKind, Source, Trajectory, TrajectoryStatus, new_id
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.device_errors import is_device_fault
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.safety import Policy, SafetyGate
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.planners import Planner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore


@dataclass(frozen=True)
class Item:
    task: TaskSpec
    repeat: int

    @property
    def key(self) -> str:
        return f"{self.task.id}#{self.repeat}"


def items_of(tasks: Sequence[TaskSpec], repeat: int, distinct: bool = False) -> list[Item]:
    """The work items of ``repeat`` episodes of each task; with ``distinct``, a task without random
    parameters runs once (a demo, or a greedy planner, would only repeat itself) while a template
    with random parameters still gets ``repeat`` seeds."""
    return [Item(t, r) for r in range(repeat) for t in tasks if r == 0 or not distinct or t.random]


@dataclass(frozen=True)
class ItemRun:
    """What every attempt of one collection shares: its id and how its episodes run."""

    collection: str
    planner_for: Callable[[TaskSpec], Planner]
    first_seed: int = 0
    policy: Policy | None = None
    max_steps: int | None = None
    allow_reset: bool = False
    disposable: frozenset[str] = frozenset()
    lease_timeout: float = 120.0
    simulator: LlmSimulator | None = None  # writes simulated services' responses as free text


@dataclass(frozen=True)
class Attempt:
    """How an attempt ended: ``trajectory`` is ``None`` when no episode ran (no phone could be
    leased, or it failed before the episode began); ``infra`` says it is to be retried."""

    trajectory: Trajectory | None
    infra: bool
    success: bool


class ResetRefused(PlannerRuntimeError):
    """The pool holds phones that seeding would wipe and the collection was not allowed to."""


class CollectionInterrupted(PlannerRuntimeError):
    """Raised in place of a planner turn once the collection was interrupted: the episode ends
    there, stored as ``interrupted``."""


def resettable(candidate: DeviceCandidate, disposable: frozenset[str] = frozenset()) -> bool:
    """Whether seeding a task may wipe this phone: a built-in virtual one, or one marked disposable."""
    return candidate.key.startswith("virtual/") or candidate.serial in disposable


def refusal(serials: Sequence[str]) -> str:
    return (f"seeding a task deletes app data on the phone, and {', '.join(serials)} "
            f"{'is' if len(serials) == 1 else 'are'} not a virtual phone: pass --allow-reset if "
            "it may be wiped, or list it in PLANNER_AGENT_DISPOSABLE_SERIALS")


def is_infra(traj: Trajectory) -> bool:
    return traj.status is TrajectoryStatus.infra_error or (
        traj.verdict is not None and traj.verdict.failure_kind is FailureKind.infra
    )


def _device_at_fault(traj: Trajectory, device: Device) -> bool:
    """Whether an infra episode's fault was the device's: its last step says so, or the device
    does not answer now. A planner endpoint that was down is not — counting that against
    healthy phones would quarantine the whole pool."""
    error = traj.steps[-1].feedback.error if traj.steps else None
    if error is not None and is_device_fault(error.code):
        return True
    try:
        device.shell(["echo", "ok"], timeout=5.0)
    except DeviceError as exc:
        return exc.infra
    return False


def run_attempt(item: Item, run: ItemRun, *, pool: DevicePool, store: TrajectoryStore, holder: str,
                stopping: threading.Event, running: Callable[[str | None], None] = lambda _: None) -> Attempt | None:
    """Run ``item`` once on a phone leased from ``pool``, its trajectory written to ``store``.

    ``running`` hears the trajectory id before the episode starts and ``None`` once it ended
    (so an interrupt can mark it). Returns ``None`` when ``stopping`` was set meanwhile: the
    episode was cut short by an interrupt, which is nobody's fault and settles nothing. Raises
    :class:`ResetRefused` for a phone attached since the collection's checks that seeding must
    not wipe; anything else raised is a bug."""
    try:
        lease = pool.lease(timeout=run.lease_timeout, holder=holder)
        with lease as device:
            if not run.allow_reset and not resettable(lease.candidate, run.disposable):  # attached since the check
                raise ResetRefused(refusal([lease.candidate.serial]))
            lease.restore_clean()  # where the source can; a failure is the device's fault, retried elsewhere
            ref = DeviceRef(serial=lease.candidate.serial, model=lease.candidate.model, kind=lease.candidate.source)
            source = Source.sandbox if lease.candidate.source == "virtual" else Source.real
            task = item.task.draw(seed=run.first_seed + item.repeat)  # repeat k: the instance of seed first_seed + k
            trajectory_id = new_id("traj_")
            running(trajectory_id)
            try:
                identity = EpisodeIdentity(device=ref, source=source, collection=run.collection, item=item.key)
                traj = run_goal(task.rendered_goal(), device=device, identity=identity,
                                planner=_Interruptible(run.planner_for(task), stopping), store=store, task=task,
                                gate=SafetyGate(policy=run.policy or Policy()),
                                max_steps=run.max_steps, trajectory_id=trajectory_id, simulator=run.simulator)
            finally:
                running(None)
            if stopping.is_set():
                return None  # interrupted: the pool closed its phones under this episode; nobody's fault
            if is_infra(traj) and _device_at_fault(traj, device):  # the episode kept its trajectory; the device takes the fault
                lease.report(DeviceError(f"{item.key}: episode ended as infra ({traj.status.value})"))
        return Attempt(traj, is_infra(traj), bool(traj.verdict and traj.verdict.success))
    except DeviceError as exc:  # no device, or it failed outside the episode (seeding, verifying)
        return Attempt(None, exc.infra, False)


class _Interruptible:
    """A planner that refuses new turns once ``stopping`` is set (a turn under way finishes)."""

    def __init__(self, planner: Planner, stopping: threading.Event) -> None:
        self._planner, self._stopping = planner, stopping
        self.name, self.release = planner.name, planner.release

    def plan(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - Planner.plan
        if self._stopping.is_set():
            raise CollectionInterrupted("the collection was interrupted")
        return self._planner.plan(*args, **kwargs)
