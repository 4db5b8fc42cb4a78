"""CARE (Competence-Aware Reward-and-Advantage Engineering): the reward and the advantage of each
episode in a group of G rollouts of one task instance, beside the vanilla GRPO baseline.

The group's success rate picks what its reward measures (:func:`regime`): below ``low`` the
model rarely succeeds, so partial progress counts (``success + progress_weight * progress``);
between the thresholds only success counts; above ``high`` success is routine, so cost counts
(``success - cost_weight * cost``, :func:`cost`). With both weights below 1 a successful episode
always outranks a failed one. The advantage is ``(r - mean) / max(std, floor)`` with the group's
population std; the default floor (:func:`default_floor`) is the population std of a group with
exactly one success among G, the smallest a mixed group's std can be in the correctness regime,
so a mixed group keeps full-size advantages while an all-success group's small cost spread stays
small instead of being blown up to the size of success against failure.

Vanilla GRPO (:data:`Algo.grpo`) adds the same three components always and divides by the
unbiased std plus 1e-4, as TRL's ``GRPOTrainer`` does: there an all-success group whose rewards
are ``[.940, .938, .936, .934]`` gets advantages of about ``[1.12, .37, -.37, -1.12]``.

API: :class:`Outcome` (one episode, checked on construction), :class:`CareSettings`,
:func:`score_group` -> :class:`GroupScore`. Pure functions; bad input raises ``ValueError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from numbers import Integral, Real
from typing import Sequence

GRPO_EPSILON = 1e-4  # what TRL's GRPOTrainer adds to the group's std


class Regime(StrEnum):
    """What a group's reward measures, chosen by the group's success rate."""

    progress = "progress"
    correctness = "correctness"
    cost = "cost"


class Algo(StrEnum):
    care = "care"
    grpo = "grpo"


def _is_real(value: object) -> bool:
    # bool is an int: True as a progress or a step count is a caller's mix-up, not a number
    return isinstance(value, Real) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class Outcome:
    """One episode as the trainer scores it."""

    success: bool
    progress: float  # fraction of the verifier's checks that passed, 0..1
    steps: int  # planner turns
    output_tokens: int  # tokens the model produced in the episode

    def __post_init__(self) -> None:
        if self.success not in (True, False):  # numpy bools pass; 0.5 or "yes" do not
            raise ValueError(f"Outcome.success must be a bool, got {self.success!r}")
        if not _is_real(self.progress) or not 0.0 <= self.progress <= 1.0:  # NaN fails the comparison
            raise ValueError(f"Outcome.progress must be a number in [0, 1], got {self.progress!r}")
        for name in ("steps", "output_tokens"):
            value = getattr(self, name)
            if not _is_count(value) or value < 0:
                raise ValueError(f"Outcome.{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True)
class CareSettings:
    """CARE's thresholds, weights and budgets; checked on construction (:meth:`check`)."""

    low: float = 0.25  # success rate below this: the progress regime
    high: float = 0.75  # success rate above this: the cost regime
    progress_weight: float = 0.5
    cost_weight: float = 0.2
    step_budget: int = 12  # planner turns at which the step half of the cost saturates
    token_budget: int = 512  # output tokens at which the token half of the cost saturates
    floor: float | None = None  # least divisor of the advantages; None: default_floor(G)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``ValueError`` naming the field that is out of range."""
        if not (_is_real(self.low) and _is_real(self.high) and 0.0 <= self.low <= self.high <= 1.0):
            raise ValueError(f"CARE thresholds need 0 <= low <= high <= 1, got low={self.low!r}, high={self.high!r}")
        for name in ("progress_weight", "cost_weight"):
            value = getattr(self, name)
            if not _is_real(value) or not 0.0 <= value < 1.0:
                raise ValueError(f"CARE {name} must be in [0, 1) so that a success always outranks a failure, got {value!r}")
        for name in ("step_budget", "token_budget"):
            value = getattr(self, name)
            if not _is_count(value) or value < 1:
                raise ValueError(f"CARE {name} must be an int >= 1, got {value!r}")
        if self.floor is not None and not (_is_real(self.floor) and 0.0 < self.floor < math.inf):
            raise ValueError(f"CARE floor must be a positive finite number or None, got {self.floor!r}")


def default_floor(group_size: int) -> float:
    """The population std of a group of ``group_size`` rewards holding one 1 and the rest 0."""
    if not _is_count(group_size) or group_size < 2:
        raise ValueError(f"a group needs at least 2 episodes, got {group_size!r}")
    p = 1.0 / group_size
    return math.sqrt(p * (1.0 - p))


def regime(success_rate: float, settings: CareSettings) -> Regime:
    """``progress`` below ``low``, ``cost`` above ``high``, ``correctness`` between, both included."""
    if not _is_real(success_rate) or not 0.0 <= success_rate <= 1.0:
        raise ValueError(f"a success rate must be in [0, 1], got {success_rate!r}")
    if success_rate < settings.low:
        return Regime.progress
    if success_rate > settings.high:
        return Regime.cost
    return Regime.correctness


def cost(outcome: Outcome, settings: CareSettings) -> float:
    """The mean of the step and token fractions of their budgets, each capped at 1: in [0, 1]."""
    steps = min(1.0, outcome.steps / settings.step_budget)
    tokens = min(1.0, outcome.output_tokens / settings.token_budget)
    return (steps + tokens) / 2.0


@dataclass(frozen=True)
class GroupScore:
    """A group's rewards and advantages, in episode order, with the components for logging."""

    regime: Regime | None  # None for grpo, which has no regimes
    success_rate: float
    rewards: tuple[float, ...]
    advantages: tuple[float, ...]
    success: tuple[float, ...]
    progress: tuple[float, ...]
    cost: tuple[float, ...]


def _advantages(rewards: Sequence[float], algo: Algo, floor: float) -> tuple[float, ...]:
    n = len(rewards)
    if max(rewards) == min(rewards):  # nothing to learn from; also keeps rounding noise out
        return (0.0,) * n
    mean = math.fsum(rewards) / n
    deviations = [r - mean for r in rewards]
    squares = math.fsum(d * d for d in deviations)
    if algo is Algo.care:
        scale = max(math.sqrt(squares / n), floor)
    else:
        scale = math.sqrt(squares / (n - 1)) + GRPO_EPSILON
    return tuple(d / scale for d in deviations)


def score_group(group: Sequence[Outcome], algo: Algo | str = Algo.care,
                settings: CareSettings = CareSettings()) -> GroupScore:
    """Rewards and advantages of one group of rollouts of the same task instance."""
    outcomes = tuple(group)
    if len(outcomes) < 2:
        raise ValueError(f"a group needs at least 2 episodes to compare, got {len(outcomes)}")
    for outcome in outcomes:
        if not isinstance(outcome, Outcome):
            raise ValueError(f"a group holds Outcome records, got {type(outcome).__name__}")
    algo = Algo(algo)
    n = len(outcomes)
    success = tuple(1.0 if o.success else 0.0 for o in outcomes)
    progress = tuple(float(o.progress) for o in outcomes)
    costs = tuple(cost(o, settings) for o in outcomes)
    rate = sum(success) / n
    pw, cw = settings.progress_weight, settings.cost_weight
    which: Regime | None = None
    if algo is Algo.grpo:
        rewards = tuple(s + pw * p - cw * c for s, p, c in zip(success, progress, costs))
    else:
        which = regime(rate, settings)
        if which is Regime.progress:
            rewards = tuple(s + pw * p for s, p in zip(success, progress))
        elif which is Regime.cost:
            rewards = tuple(s - cw * c for s, c in zip(success, costs))
        else:
            rewards = success
    floor = settings.floor if settings.floor is not None else default_floor(n)
    return GroupScore(regime=which, success_rate=rate, rewards=rewards,
                      advantages=_advantages(rewards, algo, floor),
                      success=success, progress=progress, cost=costs)
