"""Timing helper shared by the benchmark scripts (run them from the repository root)."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_ms(fn: Callable[[], object], n: int) -> float:
    """Median wall time of ``fn`` over ``n`` calls, in milliseconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)
