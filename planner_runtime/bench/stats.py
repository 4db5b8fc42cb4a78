"""The figures of a bench: success with a 95% Wilson interval and means per task, per group.

Pure functions over :class:`Outcome` records (one per scored work item). A work item whose every
attempt was an infra fault has no outcome: it is reported apart and counts in no denominator, so
an empty group (every item infra, or no task of that kind selected) has ``n == 0``, no rate and
the interval that says nothing, ``[0, 1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval


@dataclass(frozen=True)
class Outcome:
    """One work item's scored result: its last attempt that was judged (not an infra fault)."""

    item: str  # "<task id>#<repeat>"
    task_id: str
    category: str
    domain: str
    difficulty: str
    success: bool
    steps: int
    prompt_tokens: int  # its own turns' and its sub-agents'
    output_tokens: int
    dollars: float | None  # None: a planner in it has no price in the table
    seconds: float  # the episode's wall time


@dataclass(frozen=True)
class GroupStats:
    """A group's figures; the means are per scored task (``None`` for an empty group)."""

    n: int
    successes: int
    rate: float | None
    ci_low: float
    ci_high: float
    steps: float | None
    prompt_tokens: float | None
    output_tokens: float | None
    usd_per_1k: float | None  # dollars per 1,000 tasks; None when empty or a price is unknown
    seconds: float | None


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n``; ``(0, 1)`` when ``n == 0``.

    Unlike the normal approximation it stays inside ``[0, 1]`` and is not degenerate at 0 or
    ``n`` successes, which small benches hit all the time."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # the bounds are exact at the ends; rounding must not move them past the observed rate
    low = 0.0 if successes == 0 else min(p, max(0.0, centre - half))
    high = 1.0 if successes == n else max(p, min(1.0, centre + half))
    return low, high


def summarize(outcomes: Sequence[Outcome]) -> GroupStats:
    """The figures of one group of outcomes."""
    n = len(outcomes)
    wins = sum(o.success for o in outcomes)
    low, high = wilson(wins, n)

    def mean(value: Callable[[Outcome], float]) -> float | None:
        return sum(value(o) for o in outcomes) / n if n else None

    priced = n > 0 and all(o.dollars is not None for o in outcomes)
    return GroupStats(
        n=n, successes=wins, rate=wins / n if n else None, ci_low=low, ci_high=high,
        steps=mean(lambda o: o.steps), prompt_tokens=mean(lambda o: o.prompt_tokens),
        output_tokens=mean(lambda o: o.output_tokens),
        usd_per_1k=1000 * sum(o.dollars or 0.0 for o in outcomes) / n if priced else None,
        seconds=mean(lambda o: o.seconds),
    )


CATEGORIES = ("overall", "tool", "memory", "skills", "subagent")  # the MobilePA table's columns, in its order


def by(outcomes: Iterable[Outcome], key: Callable[[Outcome], str], groups: Iterable[str]) -> dict[str, GroupStats]:
    """The figures of each of ``groups`` (every one, empty or not), ``key`` saying an outcome's group."""
    members: dict[str, list[Outcome]] = {g: [] for g in groups}
    for o in outcomes:
        members.setdefault(key(o), []).append(o)
    return {g: summarize(found) for g, found in members.items()}


def by_category(outcomes: Sequence[Outcome]) -> dict[str, GroupStats]:
    """Overall and per task category, every category present even when empty."""
    return {"overall": summarize(outcomes), **by(outcomes, lambda o: o.category, CATEGORIES[1:])}
