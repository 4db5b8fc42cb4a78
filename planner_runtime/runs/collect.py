"""Collect trajectories: a suite's tasks, repeated, run in parallel over a device pool.

Each work item (``<task id>#<repeat>``) runs on whatever device the pool leases. An infra
failure — the device dropped, the planner endpoint was down, the episode ended ``infra_error``
or the verdict says ``infra`` — is kept as a trajectory (scored as infra, never against the
planner) and the item is retried, on another device where the pool has one; a fault the device
caused is counted against it. Trajectories are tagged with the collection id, so an interrupted
collection resumes where it stopped: items that already ended with a judgement about the planner
are not run again.

Every episode starts from a known state: a phone whose source keeps a clean state (a virtual
phone's boot snapshot) is restored to it before the task is seeded, so one task's leftovers never
decide the next one's verdict; a real phone is reset only by the task's own setup (``tasks check``
warns about checks that read state the setup never sets). Seeding deletes the data of the apps a
task uses: a collection runs only on virtual phones and on phones marked disposable, unless
``allow_reset`` says otherwise.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from device_farm.errors import DeviceOffline
from device_farm.health import not_ready_reason
from device_farm.pool.pool import DevicePool
from planner_runtime.contract import TrajectoryStatus, Usage, new_id
from planner_runtime.errors import PlannerRuntimeError, StoreError
from planner_runtime.harness.safety import Policy
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.planners import Planner, PlannerUnavailable
from planner_runtime.planners.shared import SharedPlanner
from planner_runtime.runs.attempt import CollectionInterrupted, Item, ItemRun, ResetRefused, items_of, refusal, resettable, run_attempt
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

__all__ = ["CollectionInterrupted", "CollectionStopped", "Item", "PhonesNotReady", "Progress", "ResetRefused", "at_risk",
           "check_reset", "collect", "ready_check", "resettable", "shared"]

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Live counts; ``changed`` is called (from worker threads) after every episode."""

    total: int = 0
    skipped: int = 0
    success: int = 0
    failed: int = 0
    infra: int = 0  # infra episodes, each retried or given up
    gave_up: list[str] = field(default_factory=list)
    hosts: dict[str, int] = field(default_factory=dict)  # on a Ray cluster: items each device host settled
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def done(self) -> int:
        return self.success + self.failed + len(self.gave_up)


class CollectionStopped(PlannerRuntimeError):
    """An episode raised what no episode should (a bug): the collection stopped, finished items kept."""


def at_risk(pool: DevicePool, disposable: frozenset[str] = frozenset()) -> list[str]:
    """Serials of the pool's phones whose data a collection would delete."""
    return sorted({c.serial for c, _ in pool.discover(fresh=True) if not resettable(c, disposable)})


class PhonesNotReady(PlannerRuntimeError):
    """The pool lists no phone that can be driven (every one is unauthorized, offline..., or
    there is none): leasing would only wait out its timeouts."""


def ready_check(pool: DevicePool) -> list[str]:
    """The pool's phones that are listed but cannot be driven, one line each saying what to do.
    Raises :class:`PhonesNotReady` when no phone is ready, and the sources' ``DeviceOffline``
    when none of them answered."""
    found = [c for c, _ in pool.discover(fresh=True)]
    unready = [not_ready_reason(c.serial, c.state) for c in found if not c.ready]
    if any(c.ready for c in found):
        return unready  # the pool leases the ready ones; the others are quarantined as they fail
    if unready:
        more = f" (and {len(unready) - 1} more phones not ready)" if len(unready) > 1 else ""
        raise PhonesNotReady(unready[0] + more)
    if pool.source_errors:
        raise DeviceOffline("; ".join(pool.source_errors.values()))
    raise PhonesNotReady(f"no phone on {', '.join(s.name for s in pool.sources)}: attach one, "
                         "or leave out --adb to collect on virtual phones")


def check_reset(pool: DevicePool, disposable: frozenset[str], allow_reset: bool) -> list[str]:
    """Serials whose data the collection will delete; raises :class:`ResetRefused` when there
    are any and ``allow_reset`` was not given."""
    wiped = at_risk(pool, disposable)
    if wiped and not allow_reset:
        raise ResetRefused(refusal(wiped))
    return wiped


def load_first(planner_for: Callable[[TaskSpec], Planner], task: TaskSpec, collection: str) -> None:
    """Load the planner the first item will use, on this thread, before any worker runs; a
    failure is left to the items, each of which tries again (and is retried as infra)."""
    load = getattr(planner_for(task), "load", None)
    if load is None:
        return
    try:
        load()
    except PlannerUnavailable as exc:
        log.warning("collection %s: %s; each episode tries again", collection, exc)


def collect(
    tasks: Sequence[TaskSpec],
    *,
    pool: DevicePool,
    store: TrajectoryStore,
    planner_for: Callable[[TaskSpec], Planner],
    workers: int,
    repeat: int = 1,
    first_seed: int = 0,
    distinct: bool = False,
    collection: str | None = None,
    max_attempts: int = 3,
    lease_timeout: float = 120.0,
    on_change: Callable[[Progress], None] | None = None,
    policy: Policy | None = None,
    max_steps: int | None = None,
    allow_reset: bool = False,
    disposable: frozenset[str] = frozenset(),
    on_interrupt: Callable[[list[str]], None] | None = None,
    stop_grace_s: float = 120.0,
    simulator: LlmSimulator | None = None,
) -> tuple[str, Progress]:
    """Run every task ``repeat`` times on ``workers`` leased devices; returns (collection id, counts).
    Repeat k of a template with random parameters runs its instance of seed ``first_seed + k``;
    with ``distinct`` a task without random parameters runs once (:func:`~.attempt.items_of`).

    Nobody is at a terminal in a collection: sensitive actions run only where ``policy`` allows
    them (deny by default). ``max_steps`` overrides each task's step limit. Phones other than
    virtual ones and the ``disposable`` serials are refused (:class:`ResetRefused`) unless
    ``allow_reset``. On Ctrl-C no new item starts, the running episodes are marked interrupted
    in the store at once (``on_interrupt`` gets their ids), each ends at its next planner turn,
    the workers are joined (up to ``stop_grace_s``; a second Ctrl-C stops waiting) and
    ``KeyboardInterrupt`` propagates; the collection resumes with the same id. With
    ``simulator``, simulated services answer in its free text (checked against the world)."""
    ready_check(pool)
    check_reset(pool, disposable, allow_reset)
    collection = collection or new_id("coll_")
    done = store.completed_items(collection)
    items = items_of(tasks, repeat, distinct)
    progress = Progress(total=len(items))
    work: queue.Queue[tuple[Item, int]] = queue.Queue()
    for item in items:
        if item.key in done:
            progress.skipped += 1
        else:
            work.put((item, 1))

    def settle(item: Item, attempt: int, infra: bool, success: bool) -> None:
        with progress.lock:
            if infra:
                progress.infra += 1
                if attempt < max_attempts:
                    work.put((item, attempt + 1))
                else:
                    progress.gave_up.append(item.key)
            elif success:
                progress.success += 1
            else:
                progress.failed += 1
        if on_change is not None:
            on_change(progress)

    crashes: list[tuple[str, Exception]] = []
    stopping = threading.Event()
    in_flight: dict[int, str] = {}  # worker -> the trajectory it runs now (GIL-atomic updates)

    def worker(index: int) -> None:
        while not crashes and not stopping.is_set():
            try:
                item, attempt = work.get(timeout=0.2)
            except queue.Empty:
                with progress.lock:
                    if progress.done + progress.skipped >= progress.total:
                        return
                continue
            try:
                run_item(index, item, attempt)
            except Exception as exc:  # a bug, not the planner's or the device's: stop rather than hang or miscount
                if stopping.is_set():
                    return  # interrupted: the store and the pool are closing under this episode
                if not isinstance(exc, ResetRefused):
                    log.exception("collection %s: %s crashed its worker", collection, item.key)
                crashes.append((item.key, exc))

    run = ItemRun(collection=collection, planner_for=planner_for, first_seed=first_seed, policy=policy,
                  max_steps=max_steps, allow_reset=allow_reset, disposable=disposable, lease_timeout=lease_timeout,
                  simulator=simulator)

    def run_item(index: int, item: Item, attempt: int) -> None:
        def running(trajectory_id: str | None) -> None:
            if trajectory_id is None:
                in_flight.pop(index, None)
            else:
                in_flight[index] = trajectory_id

        ended = run_attempt(item, run, pool=pool, store=store, holder=f"collect {collection} worker {index}",
                            stopping=stopping, running=running)
        if ended is not None:
            settle(item, attempt, ended.infra, ended.success)

    pending = [item for item in items if item.key not in done]
    if pending:
        load_first(planner_for, pending[0].task, collection)
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # a bounded wait, so Ctrl-C reaches this thread
    except KeyboardInterrupt:
        stopping.set()
        marked = _mark_interrupted(store, list(in_flight.values()))
        if on_interrupt is not None:
            on_interrupt(marked)
        _join(threads, stop_grace_s)  # so no episode (nor a model's native threads) runs on as the process exits
        raise
    if crashes:
        key, exc = crashes[0]
        if isinstance(exc, ResetRefused):
            raise exc
        raise CollectionStopped(
            f"collection {collection} stopped: {key} raised {type(exc).__name__}: {exc}; "
            f"finished items are kept, continue with --resume {collection}"
        ) from exc
    return collection, progress


def _mark_interrupted(store: TrajectoryStore, ids: list[str]) -> list[str]:
    """Store the running ones of ``ids`` as interrupted now, with the tokens of their stored
    steps; an episode that still ends on its own writes its end over this. Returns the ids
    stored as interrupted, those whose episode got there first included (a turn that ended
    just as the stop was set refuses the next one and ends its episode itself)."""
    marked = []
    for trajectory_id in ids:
        try:
            traj = store.get(trajectory_id)
        except StoreError:  # still seeding: its episode never began
            continue
        if traj.status is TrajectoryStatus.running:
            store.end(trajectory_id, TrajectoryStatus.interrupted, answer=None,
                      usage=sum((step.usage for step in traj.steps), Usage()))
            marked.append(trajectory_id)
        elif traj.status is TrajectoryStatus.interrupted:
            marked.append(trajectory_id)
    return marked


def _join(threads: list[threading.Thread], grace_s: float) -> None:
    deadline = time.monotonic() + grace_s
    for t in threads:
        while t.is_alive() and time.monotonic() < deadline:
            t.join(0.2)  # bounded, so a second Ctrl-C stops the wait


def shared(planner: Planner) -> SharedPlanner:
    """``planner`` made safe to call from every worker (loaded once, one turn at a time)."""
    return SharedPlanner(planner)
