"""How many threads the local model computes with: the cores this process is given.

torch's default is one intra-op thread per core of the machine, whatever share of it the
process has; on a busy two-core machine, or in a container pinned to fewer cores, the threads
fight each other and a step takes longer than with one. So the model uses as many threads as the
process's CPU affinity allows (``os.sched_getaffinity``), or ``PLANNER_AGENT_THREADS`` when set
(a positive integer). The count is applied on the thread that runs the model, because torch's
OpenMP setting belongs to the thread that makes it.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from planner_runtime.config import Settings

ENV_THREADS = Settings.variable("threads")


def available_cores() -> int:
    """The CPU cores this process may run on (all of the machine's where affinity is unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows: no affinity call
        return max(1, os.cpu_count() or 1)


def intra_op_threads(environ: Mapping[str, str] | None = None) -> int:
    """``PLANNER_AGENT_THREADS`` if set, else the available cores; a :class:`ConfigError` for
    a value that is not a positive integer."""
    return Settings.read("threads", environ) or available_cores()


def use_threads(torch: Any, count: int) -> int:
    """Set ``count`` intra-op threads on the calling thread, if it has another count; ``count``."""
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return count
