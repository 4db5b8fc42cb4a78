"""The trajectory store's schema: its tables and the migration of files older releases wrote.

A file's schema version is SQLite's ``user_version``. Version 0 is every file written before the
version was kept (up to and including the first release with ``parent`` links and a
``collections`` table); 1 adds ``steps.tokens``, a step's token ids packed
(:mod:`planner_runtime.trajectories.tokens`); 2 adds ``trajectories.data_source`` (demo, teacher
or self; NULL for older rows, whose planner column still says which it was); 3 adds the review
queue's tables, ``review_items`` and ``review_decisions`` (:mod:`planner_runtime.data.review`). Migrations only add: an older file's rows are read
as they are (a step record that holds its whole model input still loads, see
``contract.Step.messages_new``), so nothing stored is rewritten or lost. A file from a newer
release than this one is refused rather than misread.
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, DateTime, ForeignKey, Integer, LargeBinary, MetaData, String, Table, Text, UniqueConstraint
from sqlalchemy.engine import Connection

from planner_runtime.errors import StoreError

VERSION = 3  # the schema this release writes

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

# The review queue (schema 3). An item is one reason to look at one trajectory; a trajectory may
# have several (safety and conflict). Its resolution is what the data builder honours
# (planner_runtime.data.review.labels): set once the item's required reviews agree.
review_items = Table(
    "review_items",
    metadata,
    Column("id", String, primary_key=True),
    Column("trajectory_id", String, ForeignKey("trajectories.id"), nullable=False, index=True),
    Column("reason", String, nullable=False, index=True),  # low_confidence | conflict | safety | manual
    Column("detail", Text, nullable=False, default=""),  # why, in words (the signal that flagged it)
    Column("priority", Integer, nullable=False, default=0),  # higher is reviewed first
    Column("status", String, nullable=False, index=True),  # open | resolved
    Column("required_reviews", Integer, nullable=False, default=1),  # 2 once reviewers disagree
    Column("lease_by", String),  # who holds the item now; NULL: nobody
    Column("lease_until", DateTime(timezone=True)),
    Column("resolution", String),  # approve | reject | relabel, once resolved
    Column("label_success", Boolean),  # a relabel's success; NULL otherwise
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("resolved_at", DateTime(timezone=True)),
    UniqueConstraint("trajectory_id", "reason", name="one_item_per_reason"),
)

# Every decision a reviewer made, kept (who, when, what, why) even when a later one outweighs it.
review_decisions = Table(
    "review_decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, ForeignKey("review_items.id"), nullable=False, index=True),
    Column("reviewer", String, nullable=False),
    Column("decision", String, nullable=False),  # approve | reject | relabel
    Column("label_success", Boolean),
    Column("note", Text, nullable=False, default=""),
    Column("decided_at", DateTime(timezone=True), nullable=False),
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
