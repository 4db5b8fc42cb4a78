"""The trajectory store's schema: its tables and the migration of files older releases wrote.

A file's schema version is SQLite's ``user_version``. Version 0 is every file written before the
version was kept (up to and including the first release with ``parent`` links and a
``collections`` table); 1 adds ``steps.tokens``, a step's token ids packed
(:mod:`planner_runtime.trajectories.tokens`); 2 adds ``trajectories.data_source`` (demo, teacher
or self; NULL for older rows, whose planner column still says which it was). Migrations only add: an older file's rows are read
as they are (a step record that holds its whole model input still loads, see
``contract.Step.messages_new``), so nothing stored is rewritten or lost. A file from a newer
release than this one is refused rather than misread.
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, DateTime, ForeignKey, Integer, LargeBinary, MetaData, String, Table, Text
from sqlalchemy.engine import Connection

from planner_runtime.errors import StoreError

VERSION = 2  # the schema this release writes

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
    Column("data_source", String, index=True),  # demo, teacher, self; NULL: none (or an older row)
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
    Column("record", Text, nullable=False),  # the Step as JSON (its token ids apart when packed)
    Column("tokens", LargeBinary),  # the Step's TurnTokens packed; NULL: in the record, or none
)

# What each collection was started with (a CollectionSpec as JSON), so a resume runs the same work.
collections = Table(
    "collections",
    metadata,
    Column("id", String, primary_key=True),
    Column("spec", JSON, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
)


def add_missing_columns(conn: Connection) -> None:
    """Bring a store written by an older release up to the current columns (additive only);
    ``conn`` holds the schema lock, so two processes never add the same column."""
    for table in metadata.sorted_tables:
        have = {row[1] for row in conn.exec_driver_sql(f"PRAGMA table_info({table.name})")}
        for column in table.columns:
            if column.name not in have:
                kind = column.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")


def migrate(conn: Connection) -> None:
    """Bring the file ``conn`` holds the schema lock of up to :data:`VERSION`."""
    found = conn.exec_driver_sql("PRAGMA user_version").scalar() or 0
    if found > VERSION:
        raise StoreError(f"written by a newer release (schema {found}; this release reads up to {VERSION}): upgrade to open it")
    add_missing_columns(conn)
    if found < VERSION:
        conn.exec_driver_sql(f"PRAGMA user_version = {VERSION}")
