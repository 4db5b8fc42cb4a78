"""RL rollouts: G episodes of each task instance on the device pool, as the token sequences a trainer needs.

The episodes are a collection (:func:`planner_runtime.runs.collect.collect`): every one runs the
whole harness on a leased phone (virtual phones by default, any pool source), the grammar still
constraining each call, the safety gate deciding by the run's policy, infra faults retried on
another device and never scored. Each finished episode becomes one :class:`EpisodeSequence`:
the first turn's prompt, then everything after it as one completion — each turn's answer and the
tool response and observation the next turn's prompt adds — with ``env_mask`` 1 only on the
tokens the model sampled (tool responses, observations, the harness's prefill and every token
the grammar forced are 0). That needs each turn's prompt to extend the previous turn's prompt and
answer token for token, which the local planner's rendering gives (its prefix cache relies on
it); where it does not, the sequence ends at that turn and says so.

Past one host (``train rl --ray``) the collection runs on the device hosts of a Ray cluster
(:func:`planner_runtime.runs.distributed.collect_on_ray`): each finished episode comes back whole,
its turns' token records with it, into the same store, and is read back the same way.

Rollouts are stored in the run's own store under one collection a step, so a stopped run that
resumes finds the finished episodes of the step it was in and runs only the rest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from device_farm.pool.pool import DevicePool
from planner_runtime.contract import ErrorCode, FailureKind, FeedbackStatus, Trajectory, TrajectoryStatus
from planner_runtime.planners import Planner
from planner_runtime.runs.collect import Progress, collect
from planner_runtime.runs.distributed import Farm, PlannersOnHost, collect_on_ray
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.training.care import Outcome
from planner_runtime.trajectories.query import Filter
from planner_runtime.trajectories.store import TrajectoryStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeSequence:
    """One episode as the trainer reads it. ``outcome`` ``None``: not scored (an infra fault, an
    interrupted episode, no token records), and ``reason`` says why; its tokens then carry no
    gradient."""

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    env_mask: tuple[int, ...]  # 1: a token the model sampled; 0: environment, prefill or grammar-forced
    logprobs: tuple[float, ...]  # one a completion token (0.0 on environment tokens)
    outcome: Outcome | None
    trajectory_id: str = ""
    reason: str = ""  # why the episode is not scored, or what failed it (a blocked sensitive action)
    cut_at: int | None = None  # the turn whose prompt did not extend the one before: the sequence ends there

    @property
    def sampled_tokens(self) -> int:
        return sum(self.env_mask)


def _blocked(traj: Trajectory) -> str:
    """The first sensitive action the gate stopped, as a reason; ``""`` when none was."""
    for step in traj.steps:
        fb = step.feedback
        if fb.status in (FeedbackStatus.blocked, FeedbackStatus.needs_confirmation) or (
                fb.error is not None and fb.error.code is ErrorCode.unsafe_action):
            name = step.tool_call.name if step.tool_call else "an action"
            return f"step {step.index + 1} attempted {name} without confirmation"
    return ""


def unscored(traj: Trajectory | None, reason: str, eos: int) -> EpisodeSequence:
    """A placeholder for an episode that carries no signal: one token, masked."""
    return EpisodeSequence((eos,), (eos,), (0,), (0.0,), None, traj.id if traj else "", reason)


def episode_sequence(traj: Trajectory, eos: int) -> EpisodeSequence:
    """``traj`` as one prompt and one masked completion, with its outcome (see the module doc)."""
    if traj.status in (TrajectoryStatus.infra_error, TrajectoryStatus.interrupted, TrajectoryStatus.running):
        return unscored(traj, f"episode {traj.status.value}", eos)
    verdict = traj.verdict
    if verdict is None:
        return unscored(traj, "episode has no verdict", eos)
    if verdict.failure_kind in (FailureKind.infra, FailureKind.spec):
        return unscored(traj, f"verdict of kind {verdict.failure_kind.value}", eos)
    turns = [s.tokens for s in traj.steps]
    if not turns or any(t is None or not t.completion_ids for t in turns):
        return unscored(traj, "a turn has no token record (the planner must be the local one)", eos)
    first = turns[0]
    prompt = list(first.prompt_ids)
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    cut_at = None
    for k, turn in enumerate(turns):
        if k:
            seen = prompt + completion
            if list(turn.prompt_ids[: len(seen)]) != seen:
                cut_at = k
                break
            env = list(turn.prompt_ids[len(seen):])
            completion += env
            mask += [0] * len(env)
            logprobs += [0.0] * len(env)
        completion += turn.completion_ids
        mask += [int(s) for s in turn.sampled]
        logprobs += list(turn.logprobs)
    blocked = _blocked(traj)
    success = bool(verdict.success) and not blocked
    outcome = Outcome(success=success, progress=0.0 if blocked else float(verdict.score), steps=len(traj.steps),
                      output_tokens=sum(len(t.completion_ids) for t in turns))
    return EpisodeSequence(tuple(prompt), tuple(completion), tuple(mask), tuple(logprobs), outcome, traj.id, blocked, cut_at)


@dataclass
class RolloutResult:
    """A step's episodes: ``groups[i]`` holds instance ``i``'s, in repeat order."""

    groups: list[list[EpisodeSequence]]
    progress: Progress
    collection: str
    seconds: float = 0.0
    infra_episodes: int = 0
    notes: list[str] = field(default_factory=list)


def run_group_rollouts(instances: Sequence[TaskSpec], group: int, *, pool: DevicePool | None, store: TrajectoryStore,
                       planner_for: Callable[[TaskSpec], Planner] | None, collection: str, workers: int, eos: int,
                       policy: Any = None, max_steps: int | None = None,
                       max_attempts: int = 3, allow_reset: bool = False,
                       disposable: frozenset[str] = frozenset(), farm: Farm | None = None,
                       planners: PlannersOnHost | None = None) -> RolloutResult:
    """Run ``group`` episodes of each drawn task instance and read them back as sequences:
    on ``pool`` with ``planner_for``, or, given a ``farm``, on the device hosts of the Ray
    cluster joined, each building its planners with ``planners`` (their episodes come back
    whole into ``store``).

    An episode left infra after its retries, or unscorable, stays in its group as a placeholder
    with no outcome, so group ``i`` always has ``group`` members in repeat order."""
    import time

    started = time.perf_counter()
    if farm is not None:
        if planners is None:
            raise TypeError("run_group_rollouts on a farm needs planners (built on each host)")
        _, progress = collect_on_ray(list(instances), farm=farm, store=store, planners=planners, repeat=group,
                                     collection=collection, policy=policy, max_steps=max_steps, max_attempts=max_attempts,
                                     allow_reset=allow_reset, disposable=disposable)
    else:
        if pool is None or planner_for is None:
            raise TypeError("run_group_rollouts needs a pool and planner_for, or a farm and planners")
        _, progress = collect(list(instances), pool=pool, store=store, planner_for=planner_for, workers=workers,
                              repeat=group, collection=collection, policy=policy, max_steps=max_steps,
                              max_attempts=max_attempts, allow_reset=allow_reset, disposable=disposable)
    by_item: dict[str, Trajectory] = {}
    infra = 0
    for summary in store.query(Filter(collection=collection)):
        traj = store.get(summary.id)
        if traj.parent is not None or traj.item is None:
            continue  # a sub-agent's episode: its parent's sequence is what trains
        infra += _is_infra(traj)
        kept = by_item.get(traj.item)
        if kept is None or _is_infra(kept) > _is_infra(traj) or (
                _is_infra(kept) == _is_infra(traj) and traj.started_at >= kept.started_at):
            by_item[traj.item] = traj  # the judged attempt over an infra one; among equals, the latest
    groups = []
    notes = []
    for task in instances:
        members = []
        for r in range(group):
            traj = by_item.get(f"{task.id}#{r}")
            seq = unscored(None, "no episode (given up after infra retries)", eos) if traj is None else episode_sequence(traj, eos)
            if seq.cut_at is not None:
                notes.append(f"{traj.id}: turn {seq.cut_at + 1}'s prompt does not extend the turns before; trained up to it")
            members.append(seq)
        groups.append(members)
    return RolloutResult(groups, progress, collection, time.perf_counter() - started, infra, notes)


def _is_infra(traj: Trajectory) -> bool:
    return traj.status is TrajectoryStatus.infra_error or (
        traj.verdict is not None and traj.verdict.failure_kind is FailureKind.infra)
