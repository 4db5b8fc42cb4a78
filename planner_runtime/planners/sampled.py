"""Sampled planner: a planner asked at a temperature, each episode with seeds of its own.

Rejection sampling collects K episodes of a task from one model (the local planner, or a teacher
behind an OpenAI-compatible endpoint) at a temperature and keeps the ones the task's verifier
passes. Each episode must sample differently, yet reproducibly: the k-th episode of a task asks
turn t with seed ``k * SEEDS_PER_EPISODE + t``. The episode number is taken when the episode
first plans, so a planner that is built and only loaded (as a collection does before its workers
start) takes none.
"""

from __future__ import annotations

import itertools
import threading
from typing import Iterator, Mapping, Sequence

from planner_runtime.contract import Message, ToolSpec
from planner_runtime.planners import Planner, PlannerOutput, Sampling

SEEDS_PER_EPISODE = 1000  # turns an episode can take before its seeds meet the next episode's


class EpisodeSeeds:
    """Hands out episode numbers per task, from any thread: ``used[key]``, then on (a resumed
    collection passes how many episodes each task already has, so no seed is used twice).

    ``share`` ``(i, n)``: this is the i-th of n hosts sampling one collection, each with its own
    counter; it takes every n-th number from ``used[key] + i``, so no two hosts take the same."""

    def __init__(self, used: Mapping[str, int] | None = None, share: tuple[int, int] = (0, 1)) -> None:
        self._lock = threading.Lock()
        self._used = dict(used or {})
        self._next: dict[str, Iterator[int]] = {}
        self._share = share

    def take(self, key: str) -> int:
        index, hosts = self._share
        with self._lock:
            return next(self._next.setdefault(key, itertools.count(self._used.get(key, 0) + index, hosts)))


class SampledPlanner:
    """``planner`` asked with ``temperature`` and ``top_p``; the episode's seeds come from
    ``seeds`` under ``key`` (a task id). ``max_new_tokens`` is the output budget of a turn the
    episode asks without one (give the planner's own: a shared planner does not say it)."""

    def __init__(self, planner: Planner, *, temperature: float, top_p: float = 1.0,
                 seeds: EpisodeSeeds, key: str, max_new_tokens: int = Sampling().max_new_tokens) -> None:
        self._planner, self._seeds, self._key = planner, seeds, key
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.name, self.release = planner.name, planner.release
        self.episode: int | None = None  # taken at the first turn
        self._turn = 0

    def load(self) -> None:
        load = getattr(self._planner, "load", None)
        if load is not None:
            load()

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        if self.episode is None:
            self.episode = self._seeds.take(self._key)
        base = sampling or Sampling(max_new_tokens=self.max_new_tokens)
        chosen = base.model_copy(update={"temperature": self.temperature, "top_p": self.top_p,
                                         "seed": self.episode * SEEDS_PER_EPISODE + self._turn})
        self._turn += 1
        return self._planner.plan(messages, tools, sampling=chosen)
