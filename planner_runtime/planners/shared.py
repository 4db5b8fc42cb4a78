"""SharedPlanner: one planner used by many threads, loaded once, asked one turn at a time.

A collection runs many episodes in parallel over one model. Its first use must load it exactly
once, and a load that fails for reasons of the environment (a module that cannot be imported,
weights that cannot be read, no memory) is an infra fault: it raises
:class:`PlannerLoadFailed`, a :class:`~planner_runtime.planners.PlannerUnavailable`, so the
episode that needed the planner ends ``infra_error`` and is retried, and the next use tries to
load again.
"""

from __future__ import annotations

import threading
from typing import Any

from planner_runtime.planners import Planner, PlannerOutput, PlannerUnavailable

__all__ = ["PlannerLoadFailed", "SharedPlanner"]


class PlannerLoadFailed(PlannerUnavailable):
    """Loading the shared planner failed (a missing module, unreadable weights, no memory): an infra
    fault for the episode that needed it, which ends ``infra_error`` and is retried."""


class SharedPlanner:
    """One planner for every worker: loaded once (the first caller loads it, the others wait),
    then one turn at a time (a local model is not thread-safe).

    A collection loads it before any worker starts: a model's lazy ``transformers`` import racing
    another thread's (memory embeddings import it too) was seen to raise ``ImportError`` halfway
    through a collection. A load that fails is tried again by the next episode."""

    def __init__(self, planner: Planner) -> None:
        self._planner, self._turn, self._loaded = planner, threading.Lock(), False
        self.name, self.release = planner.name, planner.release

    def load(self) -> None:
        """Load the planner's model where it has one to load; raises :class:`PlannerLoadFailed`."""
        with self._turn:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._loaded:
            return
        load = getattr(self._planner, "load", None)
        if load is not None:
            try:
                load()
            except (ImportError, OSError, RuntimeError, MemoryError) as exc:  # the environment's fault, not a verdict
                raise PlannerLoadFailed(f"loading planner {self.name} failed: {type(exc).__name__}: {exc}") from exc
        self._loaded = True

    def plan(self, *args: Any, **kwargs: Any) -> PlannerOutput:
        with self._turn:
            self._load_locked()
            return self._planner.plan(*args, **kwargs)
