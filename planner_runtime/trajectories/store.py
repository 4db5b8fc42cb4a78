"""Trajectory store: SQLite (through SQLAlchemy) in WAL mode, one row per step as it happens.

Success and failure are both kept. A trajectory row is written when an episode starts, each step
is committed the moment it ends, and the row is closed in ``finally`` — so a crash loses no
committed step, and a trajectory left ``running`` by a dead process reads as interrupted. It is
the :class:`~planner_runtime.trajectories.sink.EpisodeSink` episodes write through. A step's
token ids are packed apart from its JSON, its prompt kept as the suffix after the ids it shares
with the previous step that has tokens (:mod:`planner_runtime.trajectories.tokens`); the reads
are :mod:`planner_runtime.trajectories.query`'s, one method each.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterator, Sequence

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from planner_runtime.contract import Step, Trajectory, TrajectoryStatus, Usage, Verdict, utcnow
from planner_runtime.cost import TokenUsage
from planner_runtime.errors import StoreError
from planner_runtime.sqlite_file import SqliteFile
from planner_runtime.trajectories import query as q
from planner_runtime.trajectories import tokens as packed
from planner_runtime.trajectories.query import Filter, Summary
from planner_runtime.trajectories.schema import collections, metadata, migrate, steps, trajectories


def _row(traj: Trajectory) -> dict[str, Any]:
    """A trajectory's row as :meth:`TrajectoryStore.begin` writes it."""
    return {
        "id": traj.id,
        "task_id": traj.task_id,
        "goal": traj.goal,
        "source": traj.source.value,
        "device": traj.device.model_dump(mode="json"),
        "planner": traj.planner,
        "planner_release": traj.planner_release,
        "harness_release": traj.harness_release,
        "data_source": traj.data_source.value if traj.data_source else None,
        "tools": [t.model_dump(mode="json") for t in traj.tools],
        "collection": traj.collection,
        "item": traj.item,
        "parent": traj.parent,
        "status": traj.status.value,
        "started_at": traj.started_at,
        "writer": _writer_id(),
    }


def _ending(traj: Trajectory) -> dict[str, Any]:
    """The columns :meth:`TrajectoryStore.end` and :meth:`TrajectoryStore.set_verdict` write."""
    verdict = traj.verdict
    return {
        "answer": traj.answer,
        "prompt_tokens": traj.usage.prompt_tokens,
        "completion_tokens": traj.usage.completion_tokens,
        "ended_at": traj.ended_at,
        "verdict": verdict.model_dump(mode="json") if verdict else None,
        "success": verdict.success if verdict else None,
        "failure_kind": verdict.failure_kind.value if verdict and verdict.failure_kind else None,
    }


_Ids = tuple[int, tuple[int, ...]]  # a step's index and its prompt + completion ids


def _step_row(trajectory_id: str, step: Step, last: _Ids) -> tuple[dict[str, Any], _Ids | None]:
    """A step's row, its token ids packed against ``last`` (the index and ids of the trajectory's
    previous step with tokens; ``(-1, ())``: none), and what the next step packs against (``None``:
    this step has no tokens, the next packs against ``last``)."""
    fb = step.feedback
    blob = None
    if step.tokens is not None and packed.packable(step.tokens):
        blob = packed.pack(step.tokens, *last)
    row = {
        "trajectory_id": trajectory_id,
        "idx": step.index,
        "tool": step.tool_call.name if step.tool_call else None,
        "status": fb.status.value,
        "error_code": fb.error.code.value if fb.error else None,
        "record": step.model_dump_json(exclude={"tokens"}) if blob is not None else step.to_json(),
        "tokens": blob,
    }
    ids = (step.index, step.tokens.prompt_ids + step.tokens.completion_ids) if step.tokens is not None else None
    return row, ids


def _writer_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(writer: str) -> bool:
    host, _, pid = writer.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another host's episode: cannot tell, assume it runs
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TrajectoryStore(SqliteFile):
    """A SQLite file of trajectories. Construct, then :meth:`open` (or use as a context manager)."""

    metadata = metadata
    what = "trajectory store"

    def _migrate(self, conn: Connection) -> None:
        migrate(conn)

    def _opened(self) -> None:
        # One write transaction at a time from this process: SQLite has one writer anyway, and
        # threads queued on a lock wake at once where SQLite's busy handler sleeps up to 100 ms.
        self._write_lock = threading.Lock()
        # Per running episode: the last step written with token ids, and those ids (prompt +
        # completion), which the next step's prompt is stored as a suffix of.
        self._last_ids: dict[str, tuple[int, tuple[int, ...]]] = {}
        self._mark_dead_writers_interrupted()

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # -- writing ----------------------------------------------------------------------------
    def begin(self, traj: Trajectory) -> None:
        with self._writing() as conn:
            conn.execute(insert(trajectories).values(**_row(traj)))

    def append_step(self, trajectory_id: str, step: Step) -> None:
        row, ids = _step_row(trajectory_id, step, self._last_ids.get(trajectory_id, (-1, ())))  # packed outside the lock
        with self._writing() as conn:
            conn.execute(insert(steps).values(**row))
        if ids is not None:  # only once committed: a reference must name a stored step
            self._last_ids[trajectory_id] = ids

    def add_finished(self, traj: Trajectory, subagents: Sequence[Trajectory] = ()) -> bool:
        """Store an episode that ran elsewhere, whole: ``traj`` and its sub-agents' episodes
        (each after the one that delegated it), with their steps, ends and verdicts, in one
        transaction, so a reader never sees half of it. Idempotent by id: returns ``False``, and
        writes nothing, when ``traj`` is stored already."""
        rows, step_rows = [], []
        for episode in (traj, *subagents):
            rows.append({**_row(episode), **_ending(episode)})
            last: _Ids = (-1, ())
            for step in episode.steps:
                row, ids = _step_row(episode.id, step, last)
                step_rows.append(row)
                last = ids or last
        with self._writing() as conn:
            if conn.execute(select(trajectories.c.id).where(trajectories.c.id == traj.id)).first() is not None:
                return False
            conn.execute(insert(trajectories), rows)
            if step_rows:
                conn.execute(insert(steps), step_rows)
        return True

    def end(self, trajectory_id: str, status: TrajectoryStatus, *, answer: str | None, usage: Usage) -> None:
        self._last_ids.pop(trajectory_id, None)
        with self._writing() as conn:
            conn.execute(
                update(trajectories)
                .where(trajectories.c.id == trajectory_id)
                .values(
                    status=status.value,
                    answer=answer,
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    ended_at=utcnow(),
                )
            )

    def set_verdict(self, trajectory_id: str, verdict: Verdict) -> None:
        with self._writing() as conn:
            conn.execute(
                update(trajectories)
                .where(trajectories.c.id == trajectory_id)
                .values(
                    verdict=verdict.model_dump(mode="json"),
                    success=verdict.success,
                    failure_kind=verdict.failure_kind.value if verdict.failure_kind else None,
                )
            )

    def record_collection(self, collection: str, spec: dict[str, Any]) -> None:
        """Keep what ``collection`` was started with (again on resume: its repeats may grow)."""
        with self._writing() as conn:
            done = conn.execute(update(collections).where(collections.c.id == collection).values(spec=spec)).rowcount
            if not done:
                conn.execute(insert(collections).values(id=collection, spec=spec, started_at=utcnow()))

    def _mark_dead_writers_interrupted(self) -> None:
        with self._writing() as conn:
            running = conn.execute(
                select(trajectories.c.id, trajectories.c.writer).where(trajectories.c.status == TrajectoryStatus.running.value)
            ).all()
            dead = [r.id for r in running if not _pid_alive(r.writer)]
            if dead:
                conn.execute(
                    update(trajectories)
                    .where(trajectories.c.id.in_(dead))
                    .values(status=TrajectoryStatus.interrupted.value)
                )

    # -- reading (query.py's selects) ------------------------------------------------------
    def get(self, trajectory_id: str) -> Trajectory:
        with self.engine.connect() as conn:
            found = q.load(conn, trajectory_id)
        if found is None:
            raise StoreError(f"no trajectory {trajectory_id!r} in {self.path}")
        return found

    def collection_spec(self, collection: str) -> dict[str, Any] | None:
        """What ``collection`` was started with, as :meth:`record_collection` kept it; ``None``
        for a collection this store does not know (or one from a release that kept no spec)."""
        with self.engine.connect() as conn:
            return q.collection_spec(conn, collection)

    def has_collection(self, collection: str) -> bool:
        """Whether any trajectory of this store belongs to ``collection``."""
        with self.engine.connect() as conn:
            return q.has_collection(conn, collection)

    def completed_items(self, collection: str) -> set[str]:
        """Items of ``collection`` a resume does not run again (see :func:`query.completed_items`)."""
        with self.engine.connect() as conn:
            return q.completed_items(conn, collection)

    def children(self, trajectory_id: str) -> list[str]:
        """Ids of the sub-agent episodes ``trajectory_id`` delegated, oldest first."""
        with self.engine.connect() as conn:
            return q.children(conn, trajectory_id)

    def descendants(self, trajectory_id: str) -> list[str]:
        """Ids of every sub-agent episode under ``trajectory_id`` (its children, theirs, ...), oldest first."""
        with self.engine.connect() as conn:
            return q.descendants(conn, trajectory_id)

    def usage(self, trajectory_id: str) -> TokenUsage:
        """The tokens ``trajectory_id`` cost: its own turns' and its sub-agents' (every level)."""
        with self.engine.connect() as conn:
            found = q.usage(conn, trajectory_id)
        if found is None:
            raise StoreError(f"no trajectory {trajectory_id!r} in {self.path}")
        return found

    def ids(
        self,
        *,
        task_id: str | None = None,
        status: str | None = None,
        success: bool | None = None,
        since: datetime | None = None,
        **more: Any,
    ) -> Iterator[str]:
        """Trajectory ids, oldest first, filtered as :class:`Filter` says (same keywords)."""
        where = Filter(task_id=task_id, status=status, success=success, since=since, **more)
        with self.engine.connect() as conn:
            yield from q.ids(conn, where)

    def query(self, where: Filter | None = None, *, limit: int | None = None) -> list[Summary]:
        """One summary row per matching trajectory (no steps loaded), oldest first; with
        ``limit``, the newest ``limit`` of them."""
        with self.engine.connect() as conn:
            return q.summaries(conn, where or Filter(), limit)
