"""The trajectory store's read side: the selects behind listings, totals, lineage and loading.

Every function takes an open :class:`~sqlalchemy.engine.Connection`, so a caller can run several
in one read snapshot; :class:`~planner_runtime.trajectories.store.TrajectoryStore` wraps each in
a method. :class:`Filter` is what a listing selects by and :class:`Summary` what it returns (a
trajectory's row and totals, no steps). Loading rebuilds each step as written: its token ids
from the packed column (:mod:`planner_runtime.trajectories.tokens`), or from its JSON in
records from before that column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement, FromClause, Select
from sqlalchemy.sql.expression import CTE

from planner_runtime.contract import DataSource, Step, Trajectory, TrajectoryStatus, Usage, Verdict
from planner_runtime.cost import TokenUsage
from planner_runtime.errors import StoreError
from planner_runtime.sqlite_file import aware
from planner_runtime.trajectories import tokens as packed
from planner_runtime.trajectories.schema import collections, steps, trajectories


@dataclass(frozen=True)
class Filter:
    """Which trajectories a query selects; ``None`` leaves a field unfiltered. ``success=False``
    is a verified failure (an unverified episode is neither); ``since`` is inclusive, ``until``
    exclusive, both on the start time. ``infra=True`` selects the episodes an infra fault ended
    (``infra_error``) or spoiled (a verdict of kind ``infra``), never the planner's doing;
    ``infra=False`` leaves them out."""

    task_id: str | None = None
    status: str | None = None
    success: bool | None = None
    failure_kind: str | None = None
    planner: str | None = None
    planner_release: str | None = None
    harness_release: str | None = None
    source: str | None = None
    data_source: str | None = None
    collection: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    infra: bool | None = None

    def apply(self, query: Select) -> Select:
        t = trajectories
        for name in ("task_id", "status", "success", "failure_kind", "planner", "planner_release",
                     "harness_release", "source", "collection"):
            value = getattr(self, name)
            if value is not None:
                query = query.where(t.c[name] == (value.value if isinstance(value, Enum) else value))
        if self.data_source is not None:
            # a row from before the column: its planner says what it was
            planners = [p for p in ("demo", "openai", "local") if DataSource.of_planner(p) == self.data_source]
            older = t.c.data_source.is_(None) & t.c.planner.in_(planners)
            query = query.where((t.c.data_source == str(self.data_source)) | older)
        if self.infra is not None:
            # coalesce: a NULL failure kind must compare false, not NULL, or negation drops the row
            infra = (t.c.status == "infra_error") | (func.coalesce(t.c.failure_kind, "") == "infra")
            query = query.where(infra if self.infra else ~infra)
        if self.since is not None:
            query = query.where(t.c.started_at >= aware(self.since))
        if self.until is not None:
            query = query.where(t.c.started_at < aware(self.until))
        return query


@dataclass(frozen=True)
class Summary:
    """A trajectory's row without its steps, as listings show it. Its tokens are its own
    (``prompt_tokens``), its sub-agents' and their sum, the total it cost."""

    id: str
    task_id: str | None
    goal: str
    source: str
    planner: str
    planner_release: str
    harness_release: str
    collection: str | None
    status: str
    success: bool | None
    failure_kind: str | None
    prompt_tokens: int  # its own planner turns'
    completion_tokens: int
    started_at: datetime
    ended_at: datetime | None
    steps: int
    subagents: int = 0  # sub-agent episodes it delegated, every level down
    subagent_prompt_tokens: int = 0  # what they cost, on top of its own
    subagent_completion_tokens: int = 0
    total_prompt_tokens: int = 0  # own + sub-agents'
    total_completion_tokens: int = 0


def _own_tokens(t: FromClause, kind: str) -> ColumnElement:
    """A trajectory's own ``prompt_tokens`` or ``completion_tokens``: the row's total, or where
    none was written (an episode cut off before its end) the sum over its committed steps, as
    :func:`planner_runtime.cost.own_usage` counts them. The steps are read only then."""
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


def load(conn: Connection, trajectory_id: str) -> Trajectory | None:
    """The whole trajectory, steps included, or ``None`` when the store has no such id."""
    row = conn.execute(select(trajectories).where(trajectories.c.id == trajectory_id)).first()
    if row is None:
        return None
    return Trajectory(
        id=row.id,
        task_id=row.task_id,
        goal=row.goal,
        source=row.source,
        device=row.device,
        planner=row.planner,
        planner_release=row.planner_release,
        harness_release=row.harness_release,
        data_source=row.data_source,
        tools=tuple(row.tools or ()),
        collection=row.collection,
        item=row.item,
        parent=row.parent,
        status=row.status,
        answer=row.answer,
        steps=tuple(load_steps(conn, trajectory_id)),
        verdict=Verdict.model_validate(row.verdict) if row.verdict else None,
        usage=Usage(prompt_tokens=row.prompt_tokens or 0, completion_tokens=row.completion_tokens or 0),
        started_at=aware(row.started_at),
        ended_at=aware(row.ended_at) if row.ended_at else None,
    )


def load_steps(conn: Connection, trajectory_id: str) -> list[Step]:
    """A trajectory's steps in order, each with its whole token ids rebuilt."""
    rows = conn.execute(select(steps.c.idx, steps.c.record, steps.c.tokens)
                        .where(steps.c.trajectory_id == trajectory_id).order_by(steps.c.idx))
    out: list[Step] = []
    ids: dict[int, tuple[int, ...]] = {}  # a step's prompt + completion ids, which a later step's prompt extends
    for idx, record, blob in rows:
        step = Step.from_json(record)
        if blob is not None:
            ref = packed.reference(blob)
            if ref >= 0 and ref not in ids:
                raise StoreError(f"step {idx} of {trajectory_id} refers to the token ids of step {ref}, which has none")
            step = step.model_copy(update={"tokens": packed.unpack(blob, ids.get(ref, ()))})
        if step.tokens is not None:
            ids[idx] = step.tokens.prompt_ids + step.tokens.completion_ids
        out.append(step)
    return out


def collection_spec(conn: Connection, collection: str) -> dict[str, Any] | None:
    return conn.execute(select(collections.c.spec).where(collections.c.id == collection)).scalar()


def has_collection(conn: Connection, collection: str) -> bool:
    return conn.execute(select(trajectories.c.id).where(trajectories.c.collection == collection).limit(1)).first() is not None


def children(conn: Connection, trajectory_id: str) -> list[str]:
    query = select(trajectories.c.id).where(trajectories.c.parent == trajectory_id).order_by(trajectories.c.started_at)
    return list(conn.execute(query).scalars())


def descendants(conn: Connection, trajectory_id: str) -> list[str]:
    t = trajectories
    tree = _tree(select(t.c.id).where(t.c.id == trajectory_id))
    query = (select(t.c.id).join_from(tree, t, t.c.id == tree.c.id).where(tree.c.id != tree.c.root)
             .order_by(t.c.started_at))
    return list(conn.execute(query).scalars())


def usage(conn: Connection, trajectory_id: str) -> TokenUsage | None:
    """The tokens ``trajectory_id`` cost, its sub-agents' included; ``None`` for an unknown id."""
    t = trajectories
    own = select(_own_tokens(t, "prompt_tokens"), _own_tokens(t, "completion_tokens")).where(t.c.id == trajectory_id)
    mine = conn.execute(own).first()
    if mine is None:
        return None
    theirs = conn.execute(_subagent_totals(select(t.c.id).where(t.c.id == trajectory_id))).first()
    return TokenUsage(
        own=Usage(prompt_tokens=mine[0], completion_tokens=mine[1]),
        subagents=Usage(prompt_tokens=theirs.subagent_prompt_tokens, completion_tokens=theirs.subagent_completion_tokens)
        if theirs else Usage(),
        subagent_episodes=theirs.subagents if theirs else 0,
    )


def ids(conn: Connection, where: Filter) -> list[str]:
    return list(conn.execute(where.apply(select(trajectories.c.id)).order_by(trajectories.c.started_at)).scalars())


def summaries(conn: Connection, where: Filter, limit: int | None = None) -> list[Summary]:
    """One summary per matching trajectory, oldest first; with ``limit``, the newest ``limit``."""
    t = trajectories
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
    rows = conn.execute(query).all()
    return [Summary(**{**r._asdict(), "started_at": aware(r.started_at),
                       "ended_at": aware(r.ended_at) if r.ended_at else None}) for r in reversed(rows)]


def completed_items(conn: Connection, collection: str) -> set[str]:
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
    return {item for item in conn.execute(query).scalars() if item}
