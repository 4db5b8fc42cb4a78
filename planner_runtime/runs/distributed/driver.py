"""The driver of a distributed collection: one work queue, one store, device hosts on a Ray cluster.

The process that runs ``collect --ray`` (or ``bench --ray``) owns the store and the queue of
items; each device host is a Ray actor (:class:`~planner_runtime.runs.distributed.host.HostWorker`)
pinned to its node, running as many items at once as it has slots. A host's finished episode
comes back whole and the driver stores it in one transaction (:meth:`TrajectoryStore.add_finished`):
an item is settled when its result is stored, and settled once. Outcomes mean what they mean in
a local collection (:func:`~planner_runtime.runs.collect.collect`): an infra attempt is kept and
the item retried, up to ``max_attempts``; the counts are the same ``Progress``; the collection
resumes by id.

A host that dies (its process killed, its node lost) takes only its running episodes with it: they
were never stored, so its items go back on the queue, for the other hosts, with a warning that
names the host. The loss does not count as an attempt of the item, but an item that was running
on ``max_attempts`` lost hosts is given up rather than allowed to take down every host. With no
host left the collection stops (:class:`HostsLost`) and keeps what finished.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from device_farm.errors import DeviceError
from device_farm.pool.pool import DevicePool
from planner_runtime.contract import Trajectory, new_id
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.safety import Policy
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.runs.attempt import Item, ItemRun, items_of
from planner_runtime.runs.collect import CollectionStopped, PhonesNotReady, Progress
from planner_runtime.runs.distributed.cluster import import_ray, live_nodes, placement
from planner_runtime.runs.distributed.host import Finished, HostPlan, HostWorker, PlannersOnHost, built_on_the_host
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

log = logging.getLogger(__name__)


class HostsLost(CollectionStopped):
    """Every device host was lost (or none started) before the collection's items were settled."""


@dataclass(frozen=True)
class Farm:
    """The device hosts of a Ray cluster: ``pool`` builds a host's pool on that host (it travels
    pickled, so it must be importable there), ``workers`` episodes run at once on each host, and
    there are ``hosts`` of them (``None``: one per live node)."""

    pool: Callable[[], DevicePool]
    workers: int
    hosts: int | None = None


@dataclass
class _Host:
    label: str
    handle: Any
    slots: int
    running: dict[Any, tuple[Item, int]] = field(default_factory=dict)  # result ref -> (item, attempt)
    alive: bool = True


def collect_on_ray(
    tasks: Sequence[TaskSpec],
    *,
    farm: Farm,
    store: TrajectoryStore,
    planners: PlannersOnHost,
    repeat: int = 1,
    first_seed: int = 0,
    distinct: bool = False,
    collection: str | None = None,
    max_attempts: int = 3,
    lease_timeout: float = 120.0,
    on_change: Callable[[Progress], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    policy: Policy | None = None,
    max_steps: int | None = None,
    allow_reset: bool = False,
    disposable: frozenset[str] = frozenset(),
    simulator: LlmSimulator | None = None,
) -> tuple[str, Progress]:
    """:func:`~planner_runtime.runs.collect.collect` on the hosts of the Ray cluster this process
    has joined (see :func:`~planner_runtime.runs.distributed.cluster.ray_session`); returns
    (collection id, counts). ``planners`` builds each host's planners on the host; ``on_warning``
    hears each line worth a user's attention (a host lost, phones not ready). On Ctrl-C the
    hosts are stopped at once, their running episodes dropped (never stored: the resume runs
    them) and ``KeyboardInterrupt`` propagates."""
    ray = import_ray()
    warn = on_warning or (lambda line: log.warning("%s", line))
    collection = collection or new_id("coll_")
    done = store.completed_items(collection)
    items = items_of(tasks, repeat, distinct)
    progress = Progress(total=len(items), skipped=sum(item.key in done for item in items))
    queue = collections.deque((item, 1) for item in items if item.key not in done)
    if not queue:
        return collection, progress
    run = ItemRun(collection=collection, planner_for=built_on_the_host, first_seed=first_seed, policy=policy,
                  max_steps=max_steps, allow_reset=allow_reset, disposable=disposable, lease_timeout=lease_timeout,
                  simulator=simulator)
    plan = HostPlan(tasks=tuple(tasks), pool=farm.pool, planners=planners, run=run)
    hosts = _start(ray, plan, farm, warn)
    try:
        _drive(ray, hosts, queue, progress, store, collection, max_attempts, on_change, warn)
    except BaseException:
        _stop(ray, hosts, graceful=False)
        raise
    _stop(ray, hosts, graceful=True)
    return collection, progress


def _start(ray: Any, plan: HostPlan, farm: Farm, warn: Callable[[str], None]) -> list[_Host]:
    """Start a host actor on each placed node; a host that cannot run (no phone ready, its node
    gone) is left out with a warning, a mistake every host would make (a phone seeding must not
    wipe, a bad planner) stops the collection."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = placement(live_nodes(ray), farm.hosts)
    actor = ray.remote(HostWorker)
    hosts, started = [], []
    for index, node in enumerate(nodes):
        handle = actor.options(
            name=f"{plan.run.collection}/host-{index + 1}", num_cpus=0, max_concurrency=farm.workers, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False),
        ).remote(plan, index, len(nodes))
        hosts.append(_Host(f"host {index + 1} on {node.hostname or node.address}", handle, farm.workers))
        started.append(handle.start.remote())
    failures: list[BaseException] = []
    for host, ref in zip(hosts, started):
        try:
            report = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            if isinstance(cause, (PhonesNotReady, DeviceError)):
                failures.append(cause)
                host.alive = False
                warn(f"{host.label}: {cause}; leaving this host out")
                continue
            _stop(ray, hosts, graceful=False)
            if isinstance(cause, PlannerRuntimeError):
                raise cause from None
            raise CollectionStopped(f"collection {plan.run.collection} stopped: {host.label} could not start "
                                    f"({type(cause).__name__}: {cause})") from cause
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError) as exc:
            host.alive = False
            warn(f"{host.label} could not start ({type(exc).__name__}); leaving this host out")
            continue
        for line in report.unready:
            warn(f"{host.label}: {line}; collecting on the others")
        if report.wiped:
            warn(f"--allow-reset: every task's setup deletes app data on {', '.join(report.wiped)} ({host.label})")
    live = [h for h in hosts if h.alive]
    if not live:
        _stop(ray, hosts, graceful=False)
        if failures:
            raise failures[0]
        raise HostsLost(f"collection {plan.run.collection} stopped: no device host started; "
                        f"finished items are kept, continue with --resume {plan.run.collection}")
    return live


def _drive(ray: Any, hosts: list[_Host], queue: collections.deque, progress: Progress, store: TrajectoryStore,
           collection: str, max_attempts: int, on_change: Callable[[Progress], None] | None,
           warn: Callable[[str], None]) -> None:
    """Hand items to hosts with free slots and settle what comes back, until every item is settled."""
    lost: collections.Counter[str] = collections.Counter()  # item -> hosts lost while it ran there
    last_loss = ""
    while True:
        live = [h for h in hosts if h.alive]
        for host in live:
            while queue and len(host.running) < host.slots:
                item, attempt = queue.popleft()
                host.running[host.handle.run.remote(item.key)] = (item, attempt)
        owner = {ref: host for host in live for ref in host.running}
        if not owner:
            if not queue:
                return
            raise HostsLost(f"collection {collection} stopped: every device host was lost (the last: {last_loss}) "
                            f"with {len(queue)} items unsettled; finished items are kept, continue with --resume {collection}")
        ready, _ = ray.wait(list(owner), num_returns=1, timeout=0.5)
        for ref in ready:
            host = owner[ref]
            item, attempt = host.running.pop(ref)
            try:
                finished = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # the host's code raised: a bug, or a phone it must not wipe
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                if isinstance(cause, PlannerRuntimeError):
                    raise cause from None
                raise CollectionStopped(
                    f"collection {collection} stopped: {item.key} raised {type(cause).__name__} on {host.label}: {cause}; "
                    f"finished items are kept, continue with --resume {collection}") from cause
            except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError) as exc:
                last_loss = f"{host.label}, {type(exc).__name__}"
                _lose(ray, host, [(item, attempt), *host.running.values()], exc, queue, lost, progress, max_attempts, warn)
                if on_change is not None:
                    on_change(progress)
                continue
            if finished is None:  # the host is closing under it: run it elsewhere
                queue.appendleft((item, attempt))
                continue
            _settle(finished, item, attempt, host, queue, progress, store, max_attempts)
            if on_change is not None:
                on_change(progress)


def _settle(finished: Finished, item: Item, attempt: int, host: _Host, queue: collections.deque, progress: Progress,
            store: TrajectoryStore, max_attempts: int) -> None:
    episodes = [Trajectory.from_json(text) for text in finished.trajectories]
    if episodes:
        store.add_finished(episodes[0], episodes[1:])
    with progress.lock:
        progress.hosts[host.label] = progress.hosts.get(host.label, 0) + 1
        if finished.infra:
            progress.infra += 1
            if attempt < max_attempts:
                queue.append((item, attempt + 1))
            else:
                progress.gave_up.append(item.key)
        elif finished.success:
            progress.success += 1
        else:
            progress.failed += 1


def _lose(ray: Any, host: _Host, running: list[tuple[Item, int]], exc: BaseException, queue: collections.deque,
          lost: collections.Counter[str], progress: Progress, max_attempts: int, warn: Callable[[str], None]) -> None:
    """``host`` is gone: its running items go back on the queue (ahead of the rest), each at the
    same attempt; an item that ``max_attempts`` lost hosts were running is given up."""
    host.alive = False
    host.running.clear()
    try:
        ray.kill(host.handle, no_restart=True)  # so a host that was only unreachable cannot come back with results
    except Exception:  # noqa: BLE001 - gone already; the point was only to make sure
        pass
    back, dropped = [], []
    for item, attempt in running:
        lost[item.key] += 1
        if lost[item.key] >= max_attempts:
            dropped.append(item.key)
            with progress.lock:
                progress.gave_up.append(item.key)
        else:
            back.append(item.key)
            queue.appendleft((item, attempt))
    what = f"{len(back)} running item{'' if len(back) == 1 else 's'} go{'es' if len(back) == 1 else ''} back on the queue"
    settled = progress.hosts.get(host.label, 0)
    warn(f"{host.label} was lost ({type(exc).__name__}) after settling {settled} item{'' if settled == 1 else 's'}; "
         f"{what}" + (f" ({', '.join(back)})" if back else "")
         + (f"; given up after {max_attempts} hosts were lost running them: {', '.join(dropped)}" if dropped else ""))


def _stop(ray: Any, hosts: list[_Host], *, graceful: bool) -> None:
    """Close the hosts (their pools and private stores), then end their actors."""
    if graceful:
        closing = [h.handle.close.remote() for h in hosts if h.alive]
        try:
            ray.get(closing, timeout=60)
        except Exception as exc:  # noqa: BLE001 - a host that cannot close is ended below all the same
            log.warning("device hosts did not all close: %s", exc)
    for host in hosts:
        try:
            ray.kill(host.handle, no_restart=True)
        except Exception:  # noqa: BLE001 - gone already
            pass
        host.alive = False
