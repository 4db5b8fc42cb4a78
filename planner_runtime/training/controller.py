"""Retuning CARE's thresholds and weights during a run, from the statistics of the last N steps,
inside hard bounds: a rule controller whose every move has a one-line reason, and one that asks
an OpenAI-compatible model and applies only what passes the same bounds.

The trainer calls ``observe(StepStats)`` after each step and ``update(settings, step)`` whenever
it likes; a controller acts once ``every`` steps have passed since it last acted, on the window of
stats observed since, and returns the new settings with the :class:`Change` list it applied. Each
value moves at most its :class:`Range`'s ``step`` per update and never leaves its range; a move
that would put ``low`` above ``high`` is dropped. Trends compare the window's later half with its
earlier half, so a window needs two steps.

Rules of :class:`RuleController`, at most one move per weight per update:

- the success rate fell by more than ``margin``: lower ``cost_weight`` if it is above its
  minimum (the penalty may be costing correctness), and never raise it in that window;
- most groups sit in the cost regime and output tokens per episode fell by less than
  ``token_drop``: raise ``cost_weight``;
- most groups sit in the progress regime and the success rate did not rise: raise ``progress_weight``;
- the success rate rose by at least ``margin``: lower ``progress_weight`` toward its minimum
  (the scaffold is working; less of it leaves less partial progress to game).
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral
from statistics import fmean
from typing import Any, Mapping, Protocol, Sequence

import httpx

from planner_runtime.training.care import CareSettings, GroupScore, Outcome, Regime

log = logging.getLogger(__name__)

KEYS = ("low", "high", "progress_weight", "cost_weight")


@dataclass(frozen=True)
class Range:
    """Where one setting may go, and how far one update may move it."""

    min: float
    max: float
    step: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min) and math.isfinite(self.max) and self.min <= self.max):
            raise ValueError(f"a range needs finite min <= max, got [{self.min}, {self.max}]")
        if not (math.isfinite(self.step) and self.step > 0):
            raise ValueError(f"a range's step must be positive, got {self.step}")

    def move(self, old: float, target: float) -> float:
        """``target`` held to one step from ``old``, then to the range (so a start outside it comes in)."""
        # rounded past float noise (0.2 + 0.05 is 0.25000000000000006), well inside any step
        moved = round(min(max(target, old - self.step), old + self.step), 12)
        return min(max(moved, self.min), self.max)


@dataclass(frozen=True)
class Bounds:
    """The range of each setting a controller may change; CARE's defaults must lie inside."""

    low: Range = Range(0.05, 0.45, 0.05)
    high: Range = Range(0.55, 0.95, 0.05)
    progress_weight: Range = Range(0.0, 0.8, 0.1)
    cost_weight: Range = Range(0.0, 0.5, 0.05)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        defaults = CareSettings()
        for key in KEYS:
            r, default = self.of(key), getattr(defaults, key)
            if not r.min <= default <= r.max:
                raise ValueError(f"bounds for {key} [{r.min}, {r.max}] leave out CARE's default {default}")
            if r.min < 0.0 or r.max > 1.0 or (key.endswith("_weight") and r.max >= 1.0):
                raise ValueError(f"bounds for {key} [{r.min}, {r.max}] reach values CARE refuses")

    def of(self, key: str) -> Range:
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        return {key: asdict(self.of(key)) for key in KEYS}


@dataclass(frozen=True)
class StepStats:
    """What one training step reports to the controller."""

    step: int
    success_rate: float
    regimes: Mapping[str, int]  # groups per regime name
    output_tokens_per_episode: float
    steps_per_episode: float

    def __post_init__(self) -> None:
        # a NaN here would silently switch every rule off and reach the model as invalid JSON
        if not 0.0 <= self.success_rate <= 1.0:
            raise ValueError(f"StepStats.success_rate must be in [0, 1], got {self.success_rate!r}")
        for name in ("output_tokens_per_episode", "steps_per_episode"):
            if not 0.0 <= getattr(self, name) < math.inf:
                raise ValueError(f"StepStats.{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        if any(isinstance(n, bool) or not isinstance(n, Integral) or n < 0 for n in self.regimes.values()):
            raise ValueError(f"StepStats.regimes must count groups, got {dict(self.regimes)!r}")

    @classmethod
    def of(cls, step: int, groups: Sequence[Sequence[Outcome]], scores: Sequence[GroupScore]) -> StepStats:
        """The stats of a step's groups and their scores (CARE's; GRPO's have no regimes)."""
        episodes = [o for group in groups for o in group]
        regimes: dict[str, int] = {}
        for score in scores:
            if score.regime is not None:
                regimes[score.regime.value] = regimes.get(score.regime.value, 0) + 1
        return cls(step=step, success_rate=fmean(float(o.success) for o in episodes), regimes=regimes,
                   output_tokens_per_episode=fmean(o.output_tokens for o in episodes),
                   steps_per_episode=fmean(o.steps for o in episodes))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(replace(self, regimes={})), "regimes": dict(self.regimes)}


@dataclass(frozen=True)
class Change:
    key: str
    old: float
    new: float
    reason: str


class Controller(Protocol):
    def observe(self, stats: StepStats) -> None: ...

    def update(self, settings: CareSettings, step: int) -> tuple[CareSettings, list[Change]]: ...


@dataclass
class _Window:
    every: int
    stats: list[StepStats] = field(default_factory=list)
    last: int = 0  # step of the last update

    def __post_init__(self) -> None:
        if self.every < 2:
            raise ValueError(f"a controller compares two halves of its window: every must be >= 2, got {self.every}")

    def take(self, step: int) -> list[StepStats] | None:
        """The window, emptied, once ``every`` steps have passed since the last one; else None."""
        if step - self.last < self.every:
            return None
        window, self.stats, self.last = self.stats, [], step
        if len(window) < 2:
            log.info("CARE controller: %d step(s) observed by step %d, too few for a trend; settings kept", len(window), step)
            return None
        return window


def _halves(window: Sequence[StepStats], name: str) -> tuple[float, float]:
    half = len(window) // 2
    return fmean(getattr(s, name) for s in window[:half]), fmean(getattr(s, name) for s in window[half:])


def _share(window: Sequence[StepStats], which: Regime) -> float:
    total = sum(n for s in window for n in s.regimes.values())
    return sum(s.regimes.get(which.value, 0) for s in window) / total if total else 0.0


def _apply(settings: CareSettings, targets: Mapping[str, tuple[float, str]],
           bounds: Bounds) -> tuple[CareSettings, list[Change]]:
    """Move each key toward its target within its range; log and return what moved."""
    changes = []
    for key, (target, reason) in targets.items():
        old = getattr(settings, key)
        new = bounds.of(key).move(old, target)
        if new != old:
            changes.append(Change(key, old, new, reason))
    moved = {c.key: c.new for c in changes}
    if moved.get("low", settings.low) > moved.get("high", settings.high):
        log.warning("CARE controller: skipped low=%s high=%s: low would be above high",
                    moved.get("low", settings.low), moved.get("high", settings.high))
        changes = [c for c in changes if c.key not in ("low", "high")]
    for c in changes:
        log.info("CARE controller: %s %s -> %s: %s", c.key, c.old, c.new, c.reason)
    return replace(settings, **{c.key: c.new for c in changes}), changes


class RuleController:
    """The rules in this module's docstring; ``margin`` is a change in the success rate that counts,
    ``token_drop`` the relative fall in output tokens that spares a raise of ``cost_weight``."""

    def __init__(self, bounds: Bounds = Bounds(), every: int = 10, *, margin: float = 0.05,
                 token_drop: float = 0.05, majority: float = 0.5) -> None:
        self.bounds, self.margin, self.token_drop, self.majority = bounds, margin, token_drop, majority
        self._window = _Window(every)

    def observe(self, stats: StepStats) -> None:
        self._window.stats.append(stats)

    def update(self, settings: CareSettings, step: int) -> tuple[CareSettings, list[Change]]:
        window = self._window.take(step)
        if window is None:
            return settings, []
        b, cw, pw = self.bounds, settings.cost_weight, settings.progress_weight
        s0, s1 = _halves(window, "success_rate")
        t0, t1 = _halves(window, "output_tokens_per_episode")
        in_cost, in_progress = _share(window, Regime.cost), _share(window, Regime.progress)
        targets: dict[str, tuple[float, str]] = {}
        if s0 - s1 > self.margin:
            if cw > b.cost_weight.min:
                targets["cost_weight"] = (cw - b.cost_weight.step, f"success rate fell {s0:.2f} -> {s1:.2f}")
        elif in_cost > self.majority and t1 > (1.0 - self.token_drop) * t0:
            targets["cost_weight"] = (cw + b.cost_weight.step, f"{in_cost:.0%} of groups in the cost regime and "
                                      f"output tokens per episode went {t0:.0f} -> {t1:.0f}")
        if in_progress > self.majority and s1 <= s0:
            targets["progress_weight"] = (pw + b.progress_weight.step, f"{in_progress:.0%} of groups in the "
                                          f"progress regime and the success rate went {s0:.2f} -> {s1:.2f}")
        elif s1 - s0 >= self.margin and pw > b.progress_weight.min:
            targets["progress_weight"] = (pw - b.progress_weight.step, f"success rate rose {s0:.2f} -> {s1:.2f}")
        return _apply(settings, targets, b)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_ASK = ("You tune the reward of a reinforcement-learning run on phone tasks (CARE). A group's success rate "
        "below `low` rewards partial progress (weight `progress_weight`), above `high` it penalises steps and "
        "output tokens (weight `cost_weight`), between them only success counts. Given the current settings, "
        "their bounds (each value moves at most `step` per update) and the recent training steps, answer with "
        "one JSON object holding any of the keys low, high, progress_weight, cost_weight that should change, "
        "each a number within its bounds, and a short `reason`. Answer {} to keep everything.")


def _parse(content: str) -> dict[str, Any] | None:
    fenced = _FENCE.search(content)
    text = fenced.group(1) if fenced else content[content.find("{"):content.rfind("}") + 1]
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return answer if isinstance(answer, dict) else None


def _content(body: object) -> str | None:
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


class LlmController:
    """Asks ``<endpoint>/v1/chat/completions`` for new settings every ``every`` steps.

    A value that is not a number or lies outside its bounds is rejected for its key (the others
    still apply); what is accepted then moves at most one step. A dead endpoint, a timeout, an
    answer other than 200 or content that holds no JSON object is logged and skipped: the run
    goes on with its settings. ``endpoint`` may end in ``/v1`` or not.
    """

    def __init__(self, endpoint: str, model: str, bounds: Bounds = Bounds(), every: int = 10,
                 timeout: float = 10.0, client: httpx.Client | None = None) -> None:
        base = endpoint.rstrip("/")
        self.url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
        if httpx.URL(self.url).scheme not in ("http", "https"):  # a typo fails here, not every N steps
            raise ValueError(f"the controller's endpoint must be an http(s) URL, got {endpoint!r}")
        self.model, self.bounds, self.timeout, self._client = model, bounds, timeout, client
        self._window = _Window(every)

    def observe(self, stats: StepStats) -> None:
        self._window.stats.append(stats)

    def update(self, settings: CareSettings, step: int) -> tuple[CareSettings, list[Change]]:
        window = self._window.take(step)
        if window is None:
            return settings, []
        content = self._ask(settings, window)
        answer = None if content is None else _parse(content)
        if answer is None:
            if content is not None:
                log.warning("CARE controller: %s answered no JSON object (%.200r); settings kept", self.model, content)
            return settings, []
        reason = answer.get("reason")
        reason = f"{self.model}: {reason[:200]}" if isinstance(reason, str) else f"proposed by {self.model}"
        targets: dict[str, tuple[float, str]] = {}
        for key in KEYS:
            if key not in answer:
                continue
            value, r = answer[key], self.bounds.of(key)
            # a NaN fails the comparison; a huge int is compared before it is made a float
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not r.min <= value <= r.max:
                log.warning("CARE controller: rejected %s=%r from %s: not a number in [%s, %s]",
                            key, value, self.model, r.min, r.max)
                continue
            targets[key] = (float(value), reason)
        return _apply(settings, targets, self.bounds)

    def _ask(self, settings: CareSettings, window: Sequence[StepStats]) -> str | None:
        state = {"settings": asdict(settings), "bounds": self.bounds.to_json(), "steps": [s.to_json() for s in window]}
        payload = {"model": self.model, "temperature": 0,
                   "messages": [{"role": "system", "content": _ASK}, {"role": "user", "content": json.dumps(state)}]}
        try:
            if self._client is not None:
                response = self._client.post(self.url, json=payload, timeout=self.timeout)
            else:
                with httpx.Client(timeout=self.timeout) as client:
                    response = client.post(self.url, json=payload)
        except httpx.HTTPError as exc:  # refused, reset, timed out: the run must not stop for it
            log.warning("CARE controller: %s failed (%s: %s); settings kept", self.url, type(exc).__name__, exc)
            return None
        if response.status_code != 200:
            log.warning("CARE controller: %s answered %d; settings kept", self.url, response.status_code)
            return None
        try:
            content = _content(response.json())
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
            content = None
        if content is None:
            log.warning("CARE controller: %s answered no chat completion; settings kept", self.url)
        return content
