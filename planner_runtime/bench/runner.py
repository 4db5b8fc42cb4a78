"""Run a bench: one collection per planner over the same tasks, then its scored outcomes.

A bench is ``collect`` once per planner (the pool leases, the three attempts an infra fault
gets, the trajectories tagged with the collection and kept), so a bench's episodes are in the
store like any collection's and an interrupted bench resumes where it stopped. Its collections
are named after the bench, ``<bench id>.<n>`` for the n-th planner, so the bench id alone finds
them again. On a Ray cluster (a :class:`~planner_runtime.runs.distributed.Farm`) each planner's
collection runs on the cluster's device hosts instead, its episodes stored here all the same.

What is scored is read back from the store, not from the live counts: a work item's outcome is
its judged attempt; its infra attempts are counted apart; an item whose every attempt was infra
(or whose task turned out broken, a ``spec`` verdict) is listed and scored for no one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from device_farm.pool.pool import DevicePool
from planner_runtime.bench.stats import Outcome
from planner_runtime.contract import FailureKind, Trajectory, TrajectoryStatus
from planner_runtime.cost import trajectory_cost
from planner_runtime.harness.safety import Policy
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.planners import Planner
from planner_runtime.runs.collect import Progress, collect
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

if TYPE_CHECKING:
    from planner_runtime.runs.distributed import Farm, PlannersOnHost


def collection_of(bench: str, index: int) -> str:
    """The collection id of the ``index``-th planner (from 0) of ``bench``."""
    return f"{bench}.{index}"


@dataclass(frozen=True)
class Contender:
    """A planner in a bench: how the report names it and how each task's episode gets one."""

    label: str
    planner: str  # as --planner said it
    collection: str
    planner_for: Callable[[TaskSpec], Planner]
    on_host: PlannersOnHost | None = None  # how a device host of a Ray cluster builds them (default: planner_for itself)


@dataclass(frozen=True)
class Results:
    """What a planner's collection scored, read from the store."""

    outcomes: tuple[Outcome, ...]
    infra_episodes: int  # attempts an infra fault ended, every one retried or given up
    infra_items: tuple[str, ...]  # items that had at least one infra attempt
    unscored: tuple[str, ...]  # items with no judged attempt: every attempt was infra
    task_errors: tuple[str, ...]  # items whose verdict blamed the task itself (kind ``spec``)


def run_contender(tasks: Sequence[TaskSpec], contender: Contender, *, pool: DevicePool | None, store: TrajectoryStore,
                  workers: int, repeat: int, first_seed: int = 0, policy: Policy | None = None, max_steps: int | None = None,
                  on_change: Callable[[Progress], None] | None = None, allow_reset: bool = False,
                  disposable: frozenset[str] = frozenset(), farm: Farm | None = None,
                  on_warning: Callable[[str], None] | None = None, simulator: LlmSimulator | None = None) -> tuple[Progress, float]:
    """Run (or resume) ``contender``'s collection; returns its counts and wall seconds. The
    options are :func:`~planner_runtime.runs.collect.collect`'s; with ``farm`` it runs on the
    cluster's device hosts (``pool`` and ``workers`` unused, ``on_warning`` hears of lost hosts)."""
    started = time.monotonic()
    if farm is not None:
        from planner_runtime.runs.distributed import SamePlanners, collect_on_ray

        _, progress = collect_on_ray(tasks, farm=farm, store=store, planners=contender.on_host or SamePlanners(contender.planner_for),
                                     repeat=repeat, first_seed=first_seed, collection=contender.collection, policy=policy,
                                     max_steps=max_steps, on_change=on_change, on_warning=on_warning, allow_reset=allow_reset,
                                     disposable=disposable, simulator=simulator)
        return progress, time.monotonic() - started
    _, progress = collect(tasks, pool=pool, store=store, planner_for=contender.planner_for, workers=workers,
                          repeat=repeat, first_seed=first_seed, collection=contender.collection, policy=policy, max_steps=max_steps,
                          on_change=on_change, allow_reset=allow_reset, disposable=disposable, simulator=simulator)
    return progress, time.monotonic() - started


def _is_infra(traj: Trajectory) -> bool:
    return traj.status is TrajectoryStatus.infra_error or (
        traj.verdict is not None and traj.verdict.failure_kind is FailureKind.infra)


def _listed(traj: Trajectory) -> str | None:
    """The id of the listed task an episode ran: its item's (``<task id>#<repeat>``), since a
    random template's repeat k runs the instance ``<task id>@<k>``."""
    return traj.item.rpartition("#")[0] if traj.item else None


def results(store: TrajectoryStore, collection: str, tasks: Sequence[TaskSpec],
            prices: dict[str, dict[str, float]]) -> Results:
    """The outcomes of ``collection``'s items among ``tasks``, priced with ``prices``."""
    by_id = {t.id: t for t in tasks}
    attempts: dict[str, list[Trajectory]] = {}
    for trajectory_id in store.ids(collection=collection):
        traj = store.get(trajectory_id)
        if traj.parent is None and traj.item and _listed(traj) in by_id:
            attempts.setdefault(traj.item, []).append(traj)
    outcomes, infra_items, unscored, broken = [], [], [], []
    infra_episodes = 0
    for item, trajs in sorted(attempts.items()):
        infra = [t for t in trajs if _is_infra(t)]
        infra_episodes += len(infra)
        if infra:
            infra_items.append(item)
        judged = [t for t in trajs if t.verdict is not None and not _is_infra(t)]
        if not judged:
            if infra:
                unscored.append(item)
            continue  # interrupted before a verdict: the resume runs it
        last = judged[-1]  # oldest first: a later judged attempt is the one a resume settled on
        if last.verdict.failure_kind is FailureKind.spec:
            broken.append(item)
            continue
        outcomes.append(_outcome(store, last, by_id[_listed(last)], prices))
    return Results(outcomes=tuple(outcomes), infra_episodes=infra_episodes, infra_items=tuple(infra_items),
                   unscored=tuple(unscored), task_errors=tuple(broken))


def _outcome(store: TrajectoryStore, traj: Trajectory, task: TaskSpec, prices: dict[str, dict[str, float]]) -> Outcome:
    cost = trajectory_cost(traj, prices, [store.get(d) for d in store.descendants(traj.id)])
    seconds = (traj.ended_at - traj.started_at).total_seconds() if traj.ended_at else 0.0
    return Outcome(
        item=traj.item or traj.id, task_id=task.id, category=task.category.value, domain=task.domain,
        difficulty=task.difficulty, success=bool(traj.verdict and traj.verdict.success), steps=len(traj.steps),
        prompt_tokens=cost.input_tokens, output_tokens=cost.output_tokens, dollars=cost.dollars, seconds=seconds,
    )
