"""What an RL step scores and logs: rewards and advantages per group, and the step log's lines.

:func:`score_step` turns a step's rollouts into one reward (``None``: unscored) and one
advantage per episode, by :func:`care.score_group`, and the step's record for ``steps.jsonl``;
:func:`append_line` writes a record durably, and :func:`kept_log` cuts the log back to a
checkpoint's step when a run resumes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from planner_runtime.training.care import Algo, CareSettings, GroupScore, score_group
from planner_runtime.training.rollout import RolloutResult

STEPS_LOG = "steps.jsonl"


def stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "abs_mean": 0.0}
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {"mean": mean, "std": std, "min": min(values), "max": max(values), "abs_mean": sum(abs(v) for v in values) / len(values)}


def score_step(result: RolloutResult, keys: Sequence[str], algo: Algo, settings: CareSettings) -> tuple[list[float | None], list[float], dict[str, Any]]:
    """Rewards (``None``: unscored) and advantages for every episode of a step, and its log record."""
    rewards: list[float | None] = []
    advantages: list[float] = []
    groups = []
    skipped = 0
    scored_outcomes = []
    for key, members in zip(keys, result.groups):
        scored = [i for i, m in enumerate(members) if m.outcome is not None]
        group_rewards: list[float | None] = [None] * len(members)
        group_adv = [0.0] * len(members)
        entry: dict[str, Any] = {"task": key, "episodes": len(members), "scored": len(scored)}
        if len(scored) >= 2:
            score: GroupScore = score_group([members[i].outcome for i in scored], algo, settings)
            for j, i in enumerate(scored):
                group_rewards[i] = score.rewards[j]
                group_adv[i] = score.advantages[j]
            entry.update(regime=score.regime.value if score.regime else None, success_rate=score.success_rate,
                         rewards=list(score.rewards), advantages=list(score.advantages),
                         success=list(score.success), progress=list(score.progress), cost=list(score.cost))
            scored_outcomes += [members[i].outcome for i in scored]
        else:
            skipped += 1
            entry.update(regime=None, skipped=f"{len(scored)} of {len(members)} episodes scored (infra or unscorable)")
        entry["reasons"] = sorted({m.reason for m in members if m.reason})
        rewards += group_rewards
        advantages += group_adv
        groups.append(entry)
    scored_groups = [g for g in groups if "rewards" in g]
    n = len(scored_outcomes)
    record = {
        "algo": algo.value,
        "success_rate": sum(o.success for o in scored_outcomes) / n if n else None,
        "groups": groups,
        "regimes": {r: sum(1 for g in scored_groups if g["regime"] == r) for r in ("progress", "correctness", "cost")},
        "reward": {"mean": mean_of([r for r in rewards if r is not None]),
                   "success": mean_of([v for g in scored_groups for v in g["success"]]),
                   "progress": mean_of([v for g in scored_groups for v in g["progress"]]),
                   "cost": mean_of([v for g in scored_groups for v in g["cost"]])},
        "advantage": stats([a for g in scored_groups for a in g["advantages"]]),
        "output_tokens_per_episode": mean_of([o.output_tokens for o in scored_outcomes]),
        "steps_per_episode": mean_of([o.steps for o in scored_outcomes]),
        "sampled_tokens_per_episode": mean_of([m.sampled_tokens for ms in result.groups for m in ms if m.outcome is not None]),
        "episodes": sum(len(ms) for ms in result.groups),
        "scored_episodes": n,
        "infra_episodes": result.infra_episodes,
        "skipped_groups": skipped,
        "rollout_seconds": result.seconds,
        "collection": result.collection,
        "notes": result.notes,
        "settings": {"low": settings.low, "high": settings.high,
                     "progress_weight": settings.progress_weight, "cost_weight": settings.cost_weight},
    }
    return rewards, advantages, record


def mean_of(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def settings_dict(settings: CareSettings) -> dict[str, float]:
    return {"low": settings.low, "high": settings.high, "progress_weight": settings.progress_weight,
            "cost_weight": settings.cost_weight}


def append_line(path: Path, record: dict[str, Any]) -> None:
    """One JSON line, flushed to disk before the checkpoint of its step is written."""
    import os

    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def kept_log(path: Path, up_to: int) -> dict[str, Any] | None:
    """Cut the step log back to the steps a checkpoint holds (a resumed run writes the later
    ones again) and return the last kept record; unreadable lines are dropped."""
    if not path.is_file():
        return None
    kept, last = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] <= up_to:
            kept.append(line)
            last = record
    tmp = path.with_name(path.name + ".part")
    tmp.write_text("".join(k + "\n" for k in kept), encoding="utf-8")
    tmp.replace(path)
    return last


