"""The trajectory store's schema: its tables, the additive migration of older files, and
the records a query selects by (:class:`Filter`) and returns (:class:`Summary`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from sqlalchemy import JSON, Boolean, Column, DateTime, ForeignKey, Integer, MetaData, String, Table, Text, func
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select

from planner_runtime.sqlite_file import aware

metadata = MetaData()

trajectories = Table(
    "trajectories",
    metadata,
    Column("id", String, primary_key=True),
    Column("task_id", String, index=True),
    Column("goal", Text, nullable=False),
    Column("source", String, nullable=False, index=True),
    Column("device", JSON, nullable=False),
    Column("planner", String, nullable=False, index=True),
    Column("planner_release", String, nullable=False),
    Column("harness_release", String, nullable=False, index=True),
    Column("tools", JSON),  # the tool specs offered to the planner
    Column("collection", String, index=True),
    Column("item", String),
    Column("parent", String, index=True),  # the delegating trajectory of a sub-agent's episode
    Column("status", String, nullable=False, index=True),
    Column("answer", Text),
    Column("success", Boolean, index=True),
    Column("failure_kind", String, index=True),
    Column("verdict", JSON),
    Column("prompt_tokens", Integer, nullable=False, default=0),
    Column("completion_tokens", Integer, nullable=False, default=0),
    Column("started_at", DateTime(timezone=True), nullable=False, index=True),
    Column("ended_at", DateTime(timezone=True)),
    Column("writer", String, nullable=False, default=""),  # host:pid that owns a running episode
)

steps = Table(
    "steps",
    metadata,
    Column("trajectory_id", String, ForeignKey("trajectories.id"), primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("tool", String, index=True),
    Column("status", String, nullable=False),
    Column("error_code", String, index=True),
    Column("record", Text, nullable=False),  # the Step as JSON
)

# What each collection was started with (a CollectionSpec as JSON), so a resume runs the same work.
collections = Table(
    "collections",
    metadata,
    Column("id", String, primary_key=True),
    Column("spec", JSON, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
)


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


def add_missing_columns(conn: Connection) -> None:
    """Bring a store written by an older release up to the current columns (additive only);
    ``conn`` holds the schema lock, so two processes never add the same column."""
    for table in metadata.sorted_tables:
        have = {row[1] for row in conn.exec_driver_sql(f"PRAGMA table_info({table.name})")}
        for column in table.columns:
            if column.name not in have:
                kind = column.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
