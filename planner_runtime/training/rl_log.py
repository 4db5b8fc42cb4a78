"""An RL run's step log, ``steps.jsonl``: one JSON object per training step, appended by the
trainer, read here into frozen records. The file is written by a process that may be killed
mid-line and is read while it grows, so every line is judged on its own: one that is not a JSON
object, lacks an integer ``step`` or holds a field of the wrong type is skipped and counted,
never raised. A field a line lacks (or holds as null, like ``kl`` when it was not computed) is None.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, TypeVar

from planner_runtime.training import TrainingError

STEPS = "steps.jsonl"
_MAX_INT = 2**53  # past this an integer is not exact as a float, and the charts draw floats


@dataclass(frozen=True)
class Group:
    """One task's group of rollouts in a step; ``regime`` is None for the GRPO baseline."""

    task: str | None
    regime: str | None
    success_rate: float | None
    rewards: tuple[float | None, ...]
    advantages: tuple[float | None, ...]


@dataclass(frozen=True)
class Reward:
    mean: float | None
    success: float | None
    progress: float | None
    cost: float | None


@dataclass(frozen=True)
class Advantage:
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    abs_mean: float | None


@dataclass(frozen=True)
class Settings:
    low: float | None
    high: float | None
    progress_weight: float | None
    cost_weight: float | None


@dataclass(frozen=True)
class ControllerChange:
    key: str | None
    old: float | None
    new: float | None
    reason: str | None


@dataclass(frozen=True)
class StepRecord:
    """One good line of the log; a field the line lacked (or held as null) is None."""

    step: int
    time: str | None
    algo: str | None
    success_rate: float | None
    groups: tuple[Group, ...]
    reward: Reward
    advantage: Advantage
    kl: float | None
    clip_fraction: float | None
    loss: float | None
    output_tokens_per_episode: float | None
    steps_per_episode: float | None
    rollout_seconds: float | None
    update_seconds: float | None
    episodes: int | None
    infra_episodes: int | None
    skipped_groups: int | None
    settings: Settings
    controller: tuple[ControllerChange, ...]


@dataclass(frozen=True)
class StepLog:
    """The good lines in step order (a step logged twice, as after a resume, keeps its last line)
    and the number of lines skipped as unreadable."""

    steps: tuple[StepRecord, ...]
    skipped: int


class _Bad(ValueError):
    """A line that is not a step record: counted by :func:`read_steps`, never seen by its caller."""


def _number(v: Any, key: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):  # bool is an int to Python, not to us
        raise _Bad(key)
    if isinstance(v, int) and abs(v) > _MAX_INT:
        raise _Bad(key)
    return float(v) if math.isfinite(v) else None  # NaN or Infinity, which json accepts, reads as not logged


def _num(obj: Mapping[str, Any], key: str) -> float | None:
    return _number(obj.get(key), key)


def _int(obj: Mapping[str, Any], key: str) -> int | None:
    v = obj.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or abs(v) > _MAX_INT):
        raise _Bad(key)
    return v


def _str(obj: Mapping[str, Any], key: str) -> str | None:
    v = obj.get(key)
    if v is not None and not isinstance(v, str):
        raise _Bad(key)
    return v


def _obj(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = obj.get(key)
    if v is not None and not isinstance(v, dict):
        raise _Bad(key)
    return v or {}


def _objects(obj: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    v = obj.get(key)
    if v is not None and not (isinstance(v, list) and all(isinstance(x, dict) for x in v)):
        raise _Bad(key)
    return v or []


def _nums(obj: Mapping[str, Any], key: str) -> tuple[float | None, ...]:
    v = obj.get(key)
    if v is not None and not isinstance(v, list):
        raise _Bad(key)
    return tuple(_number(x, key) for x in v or ())


_R = TypeVar("_R", Reward, Advantage, Settings)


def _numbers(cls: type[_R], obj: Mapping[str, Any]) -> _R:
    return cls(**{f.name: _num(obj, f.name) for f in fields(cls)})


def _record(line: str) -> StepRecord:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as exc:  # a cut-off line; or "[[[…" nested past the parser's depth
        raise _Bad("not JSON") from exc
    if not isinstance(obj, dict) or _int(obj, "step") is None:
        raise _Bad("not a step")
    groups = tuple(Group(_str(g, "task"), _str(g, "regime"), _num(g, "success_rate"), _nums(g, "rewards"),
                         _nums(g, "advantages")) for g in _objects(obj, "groups"))
    changes = tuple(ControllerChange(_str(c, "key"), _num(c, "old"), _num(c, "new"), _str(c, "reason"))
                    for c in _objects(obj, "controller"))
    return StepRecord(
        step=obj["step"], time=_str(obj, "time"), algo=_str(obj, "algo"), success_rate=_num(obj, "success_rate"),
        groups=groups, reward=_numbers(Reward, _obj(obj, "reward")), advantage=_numbers(Advantage, _obj(obj, "advantage")),
        kl=_num(obj, "kl"), clip_fraction=_num(obj, "clip_fraction"), loss=_num(obj, "loss"),
        output_tokens_per_episode=_num(obj, "output_tokens_per_episode"),
        steps_per_episode=_num(obj, "steps_per_episode"),
        rollout_seconds=_num(obj, "rollout_seconds"), update_seconds=_num(obj, "update_seconds"),
        episodes=_int(obj, "episodes"), infra_episodes=_int(obj, "infra_episodes"),
        skipped_groups=_int(obj, "skipped_groups"), settings=_numbers(Settings, _obj(obj, "settings")),
        controller=changes)


def read_steps(path: Path) -> StepLog:
    """The records of the step log at ``path``; :class:`TrainingError` when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")  # a bad byte spoils its line, not the file
    except FileNotFoundError:
        raise TrainingError(f"no step log at {path}: the RL run has not started, or this is not its folder") from None
    except OSError as exc:
        raise TrainingError(f"cannot read the step log {path}: {exc.strerror or type(exc).__name__}") from None
    by_step: dict[int, StepRecord] = {}
    skipped = 0
    for line in text.split("\n"):  # not splitlines(): a JSON string may hold U+2028, which it would cut at
        if not line.strip():
            continue
        try:
            record = _record(line)
        except _Bad:
            skipped += 1
            continue
        by_step[record.step] = record
    return StepLog(steps=tuple(by_step[s] for s in sorted(by_step)), skipped=skipped)
