"""Trajectory store: SQLite (through SQLAlchemy) in WAL mode, one row per step as it happens.

Success and failure are both kept. A trajectory row is written when an episode starts, each step
is committed the moment it ends, and the row is closed in ``finally`` — so a crash loses no
committed step, and a trajectory left ``running`` by a dead process reads as interrupted.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterator

from sqlalchemy import case, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement, FromClause, Select
from sqlalchemy.sql.expression import CTE

from planner_runtime.contract import Step, Trajectory, TrajectoryStatus, Usage, Verdict, utcnow
from planner_runtime.cost import TokenUsage
from planner_runtime.errors import StoreError
from planner_runtime.sqlite_file import SqliteFile, aware
from planner_runtime.trajectories.schema import Filter, Summary, add_missing_columns, collections, metadata, steps, trajectories

__all__ = ["Filter", "Summary", "TrajectoryStore", "completed_items"]

def _own_tokens(t: FromClause, kind: str) -> ColumnElement:
    """A trajectory's own ``prompt_tokens`` or ``completion_tokens``: the row's total, or where
    none was written (an episode cut off before its end) the sum over its committed steps, as
    :func:`planner_runtime.cost.own_usage` counts them. The steps are read only then: a step's
    record holds its whole model input."""
    from_steps = (select(func.coalesce(func.sum(func.json_extract(steps.c.record, f"$.usage.{kind}")), 0))
                  .where(steps.c.trajectory_id == t.c.id).scalar_subquery())
    unwritten = (func.coalesce(t.c.prompt_tokens, 0) == 0) & (func.coalesce(t.c.completion_tokens, 0) == 0)
    return case((unwritten, from_steps), else_=t.c[kind])


def _tree(roots: Select) -> CTE:
    """``(root, id)`` for each root of ``roots`` (a select of ``trajectories.c.id``) and every
    episode under it by ``parent`` links, every level down (the root itself included).

    Sub-agents are found by their stored ``parent`` link rather than read from the delegate
    steps, so one is counted even when the episode that delegated it died before its delegate
    step was written: the child's steps and total are committed as it runs."""
    t = trajectories
    tree = roots.with_only_columns(t.c.id.label("root"), t.c.id.label("id")).cte("tree", recursive=True)
    child = t.alias("child")
    return tree.union(select(tree.c.root, child.c.id).where(child.c.parent == tree.c.id))  # UNION: a loop ends


def _subagent_totals(roots: Select) -> Select:
    """Per root of ``roots`` that delegated anything: how many sub-agent episodes are under it
    and their own tokens summed."""
    tree, member = _tree(roots), trajectories.alias("member")
    return (
        select(
            tree.c.root,
            func.count().label("subagents"),
            func.sum(_own_tokens(member, "prompt_tokens")).label("subagent_prompt_tokens"),
            func.sum(_own_tokens(member, "completion_tokens")).label("subagent_completion_tokens"),
        )
        .join_from(tree, member, member.c.id == tree.c.id)
        .where(tree.c.id != tree.c.root)
        .group_by(tree.c.root)
    )


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
        add_missing_columns(conn)

    def _opened(self) -> None:
        # One write transaction at a time from this process: SQLite has one writer anyway, and
        # threads queued on a lock wake at once where SQLite's busy handler sleeps up to 100 ms.
        self._write_lock = threading.Lock()
        self._mark_dead_writers_interrupted()

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # -- writing ----------------------------------------------------------------------------
    def begin(self, traj: Trajectory) -> None:
        row = {
            "id": traj.id,
            "task_id": traj.task_id,
            "goal": traj.goal,
            "source": traj.source.value,
            "device": traj.device.model_dump(mode="json"),
            "planner": traj.planner,
            "planner_release": traj.planner_release,
            "harness_release": traj.harness_release,
            "tools": [t.model_dump(mode="json") for t in traj.tools],
            "collection": traj.collection,
            "item": traj.item,
            "parent": traj.parent,
            "status": traj.status.value,
            "started_at": traj.started_at,
            "writer": _writer_id(),
        }
        with self._writing() as conn:
            conn.execute(insert(trajectories).values(**row))

    def append_step(self, trajectory_id: str, step: Step) -> None:
        fb = step.feedback
        with self._writing() as conn:
            conn.execute(
                insert(steps).values(
                    trajectory_id=trajectory_id,
                    idx=step.index,
                    tool=step.tool_call.name if step.tool_call else None,
                    status=fb.status.value,
                    error_code=fb.error.code.value if fb.error else None,
                    record=step.to_json(),
                )
            )

    def end(self, trajectory_id: str, status: TrajectoryStatus, *, answer: str | None, usage: Usage) -> None:
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

    # -- reading ----------------------------------------------------------------------------
    def get(self, trajectory_id: str) -> Trajectory:
        with self.engine.connect() as conn:
            row = conn.execute(select(trajectories).where(trajectories.c.id == trajectory_id)).first()
            if row is None:
                raise StoreError(f"no trajectory {trajectory_id!r} in {self.path}")
            records = conn.execute(
                select(steps.c.record).where(steps.c.trajectory_id == trajectory_id).order_by(steps.c.idx)
            ).scalars()
            step_list = tuple(Step.from_json(r) for r in records)
        return Trajectory(
            id=row.id,
            task_id=row.task_id,
            goal=row.goal,
            source=row.source,
            device=row.device,
            planner=row.planner,
            planner_release=row.planner_release,
            harness_release=row.harness_release,
            tools=tuple(row.tools or ()),
            collection=row.collection,
            item=row.item,
            parent=row.parent,
            status=row.status,
            answer=row.answer,
            steps=step_list,
            verdict=Verdict.model_validate(row.verdict) if row.verdict else None,
            usage=Usage(prompt_tokens=row.prompt_tokens or 0, completion_tokens=row.completion_tokens or 0),
            started_at=aware(row.started_at),
            ended_at=aware(row.ended_at) if row.ended_at else None,
        )

    def collection_spec(self, collection: str) -> dict[str, Any] | None:
        """What ``collection`` was started with, as :meth:`record_collection` kept it; ``None``
        for a collection this store does not know (or one from a release that kept no spec)."""
        with self.engine.connect() as conn:
            return conn.execute(select(collections.c.spec).where(collections.c.id == collection)).scalar()

    def has_collection(self, collection: str) -> bool:
        """Whether any trajectory of this store belongs to ``collection``."""
        with self.engine.connect() as conn:
            return conn.execute(select(trajectories.c.id).where(trajectories.c.collection == collection).limit(1)).first() is not None

    def children(self, trajectory_id: str) -> list[str]:
        """Ids of the sub-agent episodes ``trajectory_id`` delegated, oldest first."""
        query = select(trajectories.c.id).where(trajectories.c.parent == trajectory_id).order_by(trajectories.c.started_at)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def descendants(self, trajectory_id: str) -> list[str]:
        """Ids of every sub-agent episode under ``trajectory_id`` (its children, theirs, ...), oldest first."""
        t = trajectories
        tree = _tree(select(t.c.id).where(t.c.id == trajectory_id))
        query = (select(t.c.id).join_from(tree, t, t.c.id == tree.c.id).where(tree.c.id != tree.c.root)
                 .order_by(t.c.started_at))
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def usage(self, trajectory_id: str) -> TokenUsage:
        """The tokens ``trajectory_id`` cost: its own turns' and its sub-agents' (every level)."""
        t = trajectories
        own = select(_own_tokens(t, "prompt_tokens"), _own_tokens(t, "completion_tokens")).where(t.c.id == trajectory_id)
        sub = _subagent_totals(select(t.c.id).where(t.c.id == trajectory_id))
        with self.engine.connect() as conn:
            mine = conn.execute(own).first()
            if mine is None:
                raise StoreError(f"no trajectory {trajectory_id!r} in {self.path}")
            theirs = conn.execute(sub).first()
        return TokenUsage(
            own=Usage(prompt_tokens=mine[0], completion_tokens=mine[1]),
            subagents=Usage(prompt_tokens=theirs.subagent_prompt_tokens, completion_tokens=theirs.subagent_completion_tokens)
            if theirs else Usage(),
            subagent_episodes=theirs.subagents if theirs else 0,
        )

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
        query = where.apply(select(trajectories.c.id)).order_by(trajectories.c.started_at)
        with self.engine.connect() as conn:
            yield from conn.execute(query).scalars()

    def query(self, where: Filter | None = None, *, limit: int | None = None) -> list[Summary]:
        """One summary row per matching trajectory (no steps loaded), oldest first; with
        ``limit``, the newest ``limit`` of them."""
        t = trajectories
        where = where or Filter()
        n_steps = select(func.count()).where(steps.c.trajectory_id == t.c.id).scalar_subquery()
        sub = _subagent_totals(where.apply(select(t.c.id))).subquery("sub")
        own_p, own_c = _own_tokens(t, "prompt_tokens"), _own_tokens(t, "completion_tokens")
        sub_p, sub_c = func.coalesce(sub.c.subagent_prompt_tokens, 0), func.coalesce(sub.c.subagent_completion_tokens, 0)
        cols = [t.c.id, t.c.task_id, t.c.goal, t.c.source, t.c.planner, t.c.planner_release, t.c.harness_release,
                t.c.collection, t.c.status, t.c.success, t.c.failure_kind, own_p.label("prompt_tokens"),
                own_c.label("completion_tokens"), t.c.started_at, t.c.ended_at, n_steps.label("steps"),
                func.coalesce(sub.c.subagents, 0).label("subagents"), sub_p.label("subagent_prompt_tokens"),
                sub_c.label("subagent_completion_tokens"), (own_p + sub_p).label("total_prompt_tokens"),
                (own_c + sub_c).label("total_completion_tokens")]
        query = where.apply(select(*cols).select_from(t.outerjoin(sub, sub.c.root == t.c.id))).order_by(t.c.started_at.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [Summary(**{**r._asdict(), "started_at": aware(r.started_at),
                           "ended_at": aware(r.ended_at) if r.ended_at else None}) for r in reversed(rows)]


def completed_items(store: TrajectoryStore, collection: str) -> set[str]:
    """Items of a collection that ended with a judgement about the planner, so a resumed
    collection does not run them again: a task's episode with a stored verdict that is not an
    infra fault, or a finished episode that has no task. An episode cut off before its verdict
    was stored (during verification) is not done: nothing judged it."""
    t = trajectories
    judged = t.c.task_id.is_not(None) & t.c.success.is_not(None) & (
        t.c.failure_kind.is_(None) | (t.c.failure_kind != "infra"))
    untasked = t.c.task_id.is_(None) & (t.c.status == TrajectoryStatus.finished.value)
    query = select(t.c.item).where(
        t.c.collection == collection,
        t.c.status.not_in(["running", "interrupted", "infra_error"]),
        judged | untasked,
    )
    with store.engine.connect() as conn:
        return {item for item in conn.execute(query).scalars() if item}
