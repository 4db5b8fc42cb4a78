"""Several processes opening one new store file at the same moment: every one of them succeeds
(the schema is created and migrated under a write lock, not by racing ``CREATE TABLE``)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

PROCESSES = 8
ROUNDS = 6

_barrier = None


def _init(barrier) -> None:  # noqa: ANN001 - a multiprocessing Barrier
    global _barrier
    _barrier = barrier
    # import before the barrier, so every process reaches the open at the same moment
    import planner_runtime.harness.memory.rows  # noqa: F401
    import planner_runtime.trajectories.store  # noqa: F401


def _open_and_write(kind: str, path: str) -> str:
    """Open ``path`` as a new store once every process is ready; '' or what went wrong."""
    from planner_runtime.contract import DeviceRef, Trajectory
    from planner_runtime.harness.memory.records import Memory, MemoryKind
    from planner_runtime.harness.memory.rows import MemoryRows
    from planner_runtime.trajectories.store import TrajectoryStore

    _barrier.wait(timeout=60)
    try:
        if kind == "trajectories":
            with TrajectoryStore(path) as store:
                store.begin(Trajectory(goal="g", source="sandbox", device=DeviceRef(serial="s"), planner="scripted"))
        else:
            with MemoryRows(path) as rows:
                rows.add(Memory(kind=MemoryKind.fact, text="the user's name is Ada", provenance="test", confidence=1.0))
    except Exception as exc:  # the failure is what the test reports
        return f"{type(exc).__name__}: {exc}"
    return ""


@pytest.fixture(scope="module")
def workers():
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    with ProcessPoolExecutor(PROCESSES, mp_context=ctx, initializer=_init, initargs=(barrier,)) as pool:
        yield pool


@pytest.mark.parametrize("kind", ["trajectories", "memories"])
def test_processes_opening_one_new_store_at_once_all_succeed(workers, tmp_path, kind):
    for round_ in range(ROUNDS):
        path = tmp_path / f"{kind}-{round_}.sqlite"
        results = list(workers.map(_open_and_write, [kind] * PROCESSES, [str(path)] * PROCESSES, timeout=120))
        failures = [r for r in results if r]
        assert not failures, f"round {round_}: {len(failures)} of {PROCESSES} failed: {failures[0]}"
        count = _rows(kind, path)
        assert count == PROCESSES  # nothing any process wrote was lost


def _rows(kind: str, path: Path) -> int:
    import sqlite3

    table = "trajectories" if kind == "trajectories" else "memories"
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
