"""A device host's part of a distributed collection: its own pool, its own planner, one item at a time per slot.

:class:`HostWorker` is a plain class; the driver makes it a Ray actor, pinned to its node, with
as many concurrent calls as the host runs episodes at once. On :meth:`HostWorker.start` it
builds its pool on that host (virtual phones, or the phones of that host's adb server) and its
planner, and checks them as a local collection does (phones ready, none that seeding must not
wipe). Each :meth:`HostWorker.run` is one attempt at one item through the same path a local
collection takes (:func:`~planner_runtime.runs.attempt.run_attempt`), its trajectory written to
a store private to the host; what it returns is the finished episode, with its sub-agents'
episodes, as JSON, for the driver to put in the one store. The host never writes the driver's
store, so an item counts once, when the driver takes its result.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from device_farm.pool.pool import DevicePool
from planner_runtime.planners import Planner
from planner_runtime.runs.attempt import Item, ItemRun, run_attempt
from planner_runtime.runs.collect import check_reset, load_first, ready_check
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

# What builds a host's planners, on the host: called with the host's index and the number of
# hosts (so sampled episodes take seeds no other host takes), it returns the collection's
# ``planner_for``. It travels to the host pickled, so it must be importable there.
PlannersOnHost = Callable[[int, int], Callable[[TaskSpec], Planner]]


@dataclass(frozen=True)
class SamePlanners:
    """Planners for every host alike: ``planner_for`` itself (a function importable on the hosts,
    such as :func:`~planner_runtime.runs.demos.demo_planner`)."""

    planner_for: Callable[[TaskSpec], Planner]

    def __call__(self, index: int, hosts: int) -> Callable[[TaskSpec], Planner]:
        return self.planner_for


def built_on_the_host(task: TaskSpec) -> Planner:
    """The ``planner_for`` of the :class:`ItemRun` a driver sends: each host puts its own in."""
    raise RuntimeError("a host's planners are built on the host (HostPlan.planners)")


@dataclass(frozen=True)
class HostPlan:
    """What every host of one collection is given: ``run`` is how its items run, with
    :func:`built_on_the_host` in place of the planners ``planners`` builds there."""

    tasks: tuple[TaskSpec, ...]
    pool: Callable[[], DevicePool]  # builds the host's pool, on the host
    planners: PlannersOnHost
    run: ItemRun


@dataclass(frozen=True)
class HostReport:
    """A host once started: its machine, its phones, and what the driver should warn about."""

    hostname: str
    unready: tuple[str, ...]  # phones listed but not ready, one line each
    wiped: tuple[str, ...]  # serials whose app data seeding deletes (allowed by --allow-reset)


@dataclass(frozen=True)
class Finished:
    """One attempt's outcome. ``trajectories``: the episode, then its sub-agents' episodes (each
    after the one that delegated it), as JSON; empty when no episode ran (no phone, or it failed
    before the episode began)."""

    key: str
    infra: bool
    success: bool
    trajectories: tuple[str, ...] = ()


class HostWorker:
    """One device host of a distributed collection (run as a Ray actor; see the module doc)."""

    def __init__(self, plan: HostPlan, index: int, hosts: int) -> None:
        self._plan, self._index, self._hosts = plan, index, hosts
        self._tasks = {t.id: t for t in plan.tasks}
        self._stopping = threading.Event()
        self._folder: Path | None = None
        self._pool: DevicePool | None = None
        self._store: TrajectoryStore | None = None
        self._run: ItemRun | None = None

    def start(self) -> HostReport:
        """Build and check the pool and the planner; raises what a local collection would
        (phones not ready, phones seeding must not wipe, a planner that cannot be built)."""
        plan = self._plan
        try:
            self._folder = Path(tempfile.mkdtemp(prefix="planner-agent-host-"))
            self._store = TrajectoryStore(self._folder / "episodes.sqlite", create=True).open()
            self._pool = plan.pool().start()
            unready = ready_check(self._pool)
            wiped = check_reset(self._pool, plan.run.disposable, plan.run.allow_reset)
            planner_for = plan.planners(self._index, self._hosts)
            self._run = replace(plan.run, planner_for=planner_for)
            if plan.tasks:
                load_first(planner_for, plan.tasks[0], plan.run.collection)
        except BaseException:
            self.close()
            raise
        return HostReport(socket.gethostname(), tuple(unready), tuple(wiped))

    def run(self, key: str) -> Finished | None:
        """One attempt at item ``key`` (``<task id>#<repeat>``); ``None`` when the host is
        closing and the episode was cut short (nothing settled)."""
        if self._run is None or self._pool is None or self._store is None:
            raise RuntimeError("HostWorker.run before start")
        task_id, _, repeat = key.rpartition("#")
        item = Item(self._tasks[task_id], int(repeat))
        ended = run_attempt(item, self._run, pool=self._pool, store=self._store, stopping=self._stopping,
                            holder=f"collect {self._plan.run.collection} host {self._index + 1}")
        if ended is None:
            return None
        episodes = ()
        if ended.trajectory is not None:
            below = [self._store.get(i) for i in self._store.descendants(ended.trajectory.id)]
            episodes = tuple(t.to_json() for t in (ended.trajectory, *below))
        return Finished(key, ended.infra, ended.success, episodes)

    def close(self) -> None:
        """Stop: running episodes end at their next turn; the pool and the private store go."""
        self._stopping.set()
        try:
            if self._pool is not None:
                self._pool.close()
        finally:
            if self._store is not None:
                self._store.close()
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
