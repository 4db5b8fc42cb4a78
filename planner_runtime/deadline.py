"""The wall-clock deadline of the work in progress, for code that waits on its behalf.

An episode opens a deadline for its whole run (``EpisodeLimits.max_seconds``) and one per planner
turn inside it; a sub-agent's episode opens its own inside its parent's, so it can never outlast
it. Code that waits — an HTTP request to a planner server, a decoding loop, a sub-agent —
asks :func:`seconds_left` or :func:`expired` instead of taking an argument through every
signature in between (the ``Planner`` protocol stays as it is). The deadline is held in a
context variable: a thread started for the work must run in a copy of the caller's context
(``contextvars.copy_context().run``) to see it. With none open, nothing is bounded by it.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator


@dataclass
class Deadline:
    """A point on the monotonic clock, never later than its parent's; :meth:`expire` moves it
    to now (the work was given up), and so ends the deadlines opened inside it too."""

    at: float
    parent: Deadline | None = None

    def due(self) -> float:
        return self.at if self.parent is None else min(self.at, self.parent.due())

    def left(self) -> float:
        return max(0.0, self.due() - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.due()

    def expire(self) -> None:
        self.at = min(self.at, time.monotonic())


_current: ContextVar[Deadline | None] = ContextVar("planner_runtime_deadline", default=None)


def current() -> Deadline | None:
    return _current.get()


def seconds_left(default: float = math.inf) -> float:
    """``default``, or less when the open deadline comes sooner."""
    deadline = _current.get()
    return default if deadline is None else min(default, deadline.left())


def expired() -> bool:
    """Whether a deadline is open and has passed: the work's result will not be used."""
    deadline = _current.get()
    return deadline is not None and deadline.passed()


@contextmanager
def within(seconds: float) -> Iterator[Deadline]:
    """Open a deadline ``seconds`` from now, or at the enclosing one if that comes first."""
    deadline = Deadline(time.monotonic() + seconds, _current.get())
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)
