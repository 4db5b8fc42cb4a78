"""Memory rows: one SQLite file per user profile (SQLAlchemy Core, WAL), with FTS5 beside it.

``memories`` holds the records and their embeddings (float32 blobs, filled lazily by the
search side: adding a memory never loads the model); ``memories_fts`` is an external-content
FTS5 index kept in step by triggers, which also bump a generation counter so a process notices
another one's writes and rebuilds its in-memory vector index. Ranked retrieval lives in
:mod:`planner_runtime.harness.memory.search`.
"""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Iterable, Iterator

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    column,
    delete,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql.selectable import TextualSelect

from planner_runtime.contract import utcnow
from planner_runtime.errors import StoreError
from planner_runtime.harness.memory.records import Memory, MemoryKind, Trigger, TriggerKind
from planner_runtime.harness.memory.ranking import fts_query
from planner_runtime.sqlite_file import SqliteFile, aware

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),  # the FTS5 rowid
    Column("id", String, unique=True, nullable=False),
    Column("kind", String, nullable=False, index=True),
    Column("text", Text, nullable=False),
    Column("provenance", String, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_used_at", DateTime(timezone=True)),
    Column("trigger_kind", String),
    Column("trigger_value", String),
    Column("expires_at", DateTime(timezone=True)),
    Column("fired_at", DateTime(timezone=True)),
    Column("embedding", LargeBinary),
    Column("embedding_model", String),
)

memory_meta = Table("memory_meta", metadata, Column("key", String, primary_key=True), Column("value", Integer, nullable=False))

_FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, content='memories', content_rowid='seq', tokenize='porter unicode61')",
    "INSERT OR IGNORE INTO memory_meta(key, value) VALUES ('generation', 0)",
    """CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
         INSERT INTO memories_fts(rowid, text) VALUES (new.seq, new.text);
         UPDATE memory_meta SET value = value + 1 WHERE key = 'generation';
       END""",
    """CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
         INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.seq, old.text);
         UPDATE memory_meta SET value = value + 1 WHERE key = 'generation';
       END""",
    """CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text ON memories BEGIN
         INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.seq, old.text);
         INSERT INTO memories_fts(rowid, text) VALUES (new.seq, new.text);
         UPDATE memory_meta SET value = value + 1 WHERE key = 'generation';
       END""",
    """CREATE TRIGGER IF NOT EXISTS memories_ae AFTER UPDATE OF kind, embedding ON memories BEGIN
         UPDATE memory_meta SET value = value + 1 WHERE key = 'generation';
       END""",
)



def row_to_memory(row: Row | SimpleNamespace) -> Memory:
    """A record from a row of the record columns (any object with them as attributes)."""
    trigger = Trigger(kind=TriggerKind(row.trigger_kind), value=row.trigger_value) if row.trigger_kind else None
    return Memory(
        id=row.id,
        kind=MemoryKind(row.kind),
        text=row.text,
        provenance=row.provenance,
        confidence=row.confidence,
        created_at=aware(row.created_at),
        last_used_at=aware(row.last_used_at) if row.last_used_at else None,
        trigger=trigger,
        expires_at=aware(row.expires_at) if row.expires_at else None,
        fired_at=aware(row.fired_at) if row.fired_at else None,
    )


def _memory_to_row(memory: Memory) -> dict:
    return {
        "id": memory.id,
        "kind": memory.kind.value,
        "text": memory.text,
        "provenance": memory.provenance,
        "confidence": memory.confidence,
        "created_at": memory.created_at,
        "last_used_at": memory.last_used_at,
        "trigger_kind": memory.trigger.kind.value if memory.trigger else None,
        "trigger_value": memory.trigger.value if memory.trigger else None,
        "expires_at": memory.expires_at,
        "fired_at": memory.fired_at,
    }


RECORD_COLUMNS = [c for c in memories.columns if c.name not in ("embedding", "embedding_model")]  # all but the vector


def _fts_rows(expr: str) -> TextualSelect:
    """The seqs of the rows matching an FTS5 expression."""
    return text("SELECT rowid AS seq FROM memories_fts WHERE memories_fts MATCH :expr").bindparams(expr=expr).columns(column("seq", Integer))


class MemoryRows(SqliteFile):
    """A user's memories in one SQLite file: adding, reading, forgetting. Construct, then
    :meth:`open` (or use ``with``). Ranked retrieval is :class:`~planner_runtime.harness.memory.search.MemoryStore`."""

    metadata = metadata
    what = "memory store"
    # a search reads its candidates' rows from all over the file: through a memory map rather
    # than a read call per page (a third less time for 50 scattered rows of a 100k-row file)
    mmap_bytes = 1 << 30

    def _migrate(self, conn: Connection) -> None:
        for ddl in _FTS_DDL:
            conn.exec_driver_sql(ddl)

    # -- writing ----------------------------------------------------------------------------
    def add(self, memory: Memory) -> Memory:
        """Store ``memory`` (its embedding is computed later, when a search needs it)."""
        with self.engine.begin() as conn:
            conn.execute(insert(memories).values(**_memory_to_row(memory)))
        return memory

    def add_many(self, items: Iterable[Memory], *, skip_existing: bool = True) -> tuple[int, int]:
        """Store many in one transaction; returns (added, skipped because the id exists)."""
        added = skipped = 0
        with self.engine.begin() as conn:
            have = set(conn.execute(select(memories.c.id)).scalars()) if skip_existing else set()
            rows = []
            for memory in items:
                if memory.id in have:
                    skipped += 1
                    continue
                have.add(memory.id)
                rows.append(_memory_to_row(memory))
            if rows:
                conn.execute(insert(memories), rows)
                added = len(rows)
        return added, skipped

    def forget(self, ids: Iterable[str]) -> int:
        """Delete by id; returns how many existed."""
        ids = list(ids)
        with self.engine.begin() as conn:
            return conn.execute(delete(memories).where(memories.c.id.in_(ids))).rowcount if ids else 0

    def matching(self, query: str, *, kinds: Iterable[MemoryKind] | None = None) -> list[Memory]:
        """Memories whose text contains every word of ``query`` (FTS5, stemmed): what
        ``forget --query`` deletes."""
        expr = fts_query(query, all_terms=True)
        if expr is None:
            return []
        stmt = select(*RECORD_COLUMNS).where(memories.c.seq.in_(_fts_rows(expr))).order_by(memories.c.seq)
        if kinds is not None:
            stmt = stmt.where(memories.c.kind.in_([MemoryKind(k).value for k in kinds]))
        with self.engine.connect() as conn:
            return [row_to_memory(r) for r in conn.execute(stmt)]

    def touch(self, ids: Iterable[str], when: datetime | None = None) -> None:
        ids = list(ids)
        if ids:
            with self.engine.begin() as conn:
                conn.execute(update(memories).where(memories.c.id.in_(ids)).values(last_used_at=when or utcnow()))

    def mark_fired(self, ids: Iterable[str], when: datetime | None = None) -> None:
        ids = list(ids)
        if ids:
            with self.engine.begin() as conn:
                conn.execute(update(memories).where(memories.c.id.in_(ids)).values(fired_at=when or utcnow()))

    # -- reading ----------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        with self.engine.connect() as conn:
            row = conn.execute(select(*RECORD_COLUMNS).where(memories.c.id == memory_id)).first()
        if row is None:
            raise StoreError(f"no memory {memory_id!r} in {self.path}")
        return row_to_memory(row)

    def list(self, *, kinds: Iterable[MemoryKind] | None = None, limit: int | None = None) -> list[Memory]:
        """Newest first."""
        stmt = select(*RECORD_COLUMNS).order_by(memories.c.seq.desc())
        if kinds is not None:
            stmt = stmt.where(memories.c.kind.in_([MemoryKind(k).value for k in kinds]))
        if limit is not None:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [row_to_memory(r) for r in conn.execute(stmt)]

    def count(self) -> int:
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM memories").scalar_one()

    def empty(self) -> bool:
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT 1 FROM memories LIMIT 1").first() is None

    def intents(self) -> list[Memory]:
        return self.list(kinds=[MemoryKind.intent])

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.list())

    def generation(self) -> int:
        """Bumped by every insert, delete and change of text, kind or embedding, in any process."""
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT value FROM memory_meta WHERE key = 'generation'").scalar_one()
