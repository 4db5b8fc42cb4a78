"""The memory store: one SQLite file per user profile (SQLAlchemy Core, WAL), with FTS5 beside it.

``memories`` holds the records and their embeddings (float32 blobs, filled lazily: adding a
memory never loads the model); ``memories_fts`` is an external-content FTS5 index kept in step
by triggers, which also bump a generation counter so a process notices another one's writes and
rebuilds its in-memory vector index. :meth:`MemoryStore.search` merges FTS5 and embedding
candidates and ranks them by :func:`~planner_runtime.harness.memory_retrieval.final_score`.
Without the embedding package (or with ``embedder=None``) retrieval is FTS5 only.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator, Literal

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
    bindparam,
    column,
    create_engine,
    delete,
    event,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine, Row
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.exc import SQLAlchemyError

from planner_runtime.contract import utcnow
from planner_runtime.errors import StoreError
from planner_runtime.harness.memory_embeddings import Embedder, default_embedder
from planner_runtime.harness.memory_records import Hit, Memory, MemoryKind, Trigger, TriggerKind
from planner_runtime.harness.memory_retrieval import VectorIndex, final_score, fts_query
from planner_runtime.trajectories import _aware, _sqlite_pragmas

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

CANDIDATES = 50  # taken from each of FTS5 and the vector index before the final ranking


def _row_to_memory(row: Row) -> Memory:
    trigger = Trigger(kind=TriggerKind(row.trigger_kind), value=row.trigger_value) if row.trigger_kind else None
    return Memory(
        id=row.id,
        kind=MemoryKind(row.kind),
        text=row.text,
        provenance=row.provenance,
        confidence=row.confidence,
        created_at=_aware(row.created_at),
        last_used_at=_aware(row.last_used_at) if row.last_used_at else None,
        trigger=trigger,
        expires_at=_aware(row.expires_at) if row.expires_at else None,
        fired_at=_aware(row.fired_at) if row.fired_at else None,
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


_COLUMNS = [c for c in memories.columns if c.name not in ("embedding", "embedding_model")]


def _fts_rows(expr: str, *, scored: bool = False, limit: int | None = None) -> TextualSelect:
    """Rows matching an FTS5 expression: their seq, and with ``scored`` their BM25 (lower is
    better, as FTS5 gives it), best first."""
    if not scored:
        return text("SELECT rowid AS seq FROM memories_fts WHERE memories_fts MATCH :expr").bindparams(expr=expr).columns(column("seq", Integer))
    sql = "SELECT rowid AS seq, bm25(memories_fts) AS bm25 FROM memories_fts WHERE memories_fts MATCH :expr ORDER BY bm25"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return text(sql).bindparams(expr=expr).columns(column("seq", Integer), column("bm25", Float))


class MemoryStore:
    """A user's memories in one SQLite file. Construct, then :meth:`open` (or use ``with``).

    ``embedder="auto"`` uses the offline MiniLM package when it is installed; ``None`` keeps
    retrieval to FTS5 alone.
    """

    def __init__(self, path: Path | str, *, embedder: Embedder | None | Literal["auto"] = "auto") -> None:
        self.path = Path(path)
        self._embedder_choice = embedder
        self.embedder: Embedder | None = None
        self._engine: Engine | None = None
        self._index: VectorIndex | None = None
        self._index_generation = -1

    # -- lifecycle --------------------------------------------------------------------------
    def open(self) -> MemoryStore:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(f"sqlite:///{self.path}")
            event.listen(engine, "connect", _sqlite_pragmas)
            metadata.create_all(engine)
            with engine.begin() as conn:
                for ddl in _FTS_DDL:
                    conn.exec_driver_sql(ddl)
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"cannot open memory store {self.path}: {exc}") from exc
        self._engine = engine
        self.embedder = default_embedder() if self._embedder_choice == "auto" else self._embedder_choice  # type: ignore[assignment]
        return self

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> MemoryStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError("memory store is not open")
        return self._engine

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
        stmt = select(*_COLUMNS).where(memories.c.seq.in_(_fts_rows(expr))).order_by(memories.c.seq)
        if kinds is not None:
            stmt = stmt.where(memories.c.kind.in_([MemoryKind(k).value for k in kinds]))
        with self.engine.connect() as conn:
            return [_row_to_memory(r) for r in conn.execute(stmt)]

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
            row = conn.execute(select(*_COLUMNS).where(memories.c.id == memory_id)).first()
        if row is None:
            raise StoreError(f"no memory {memory_id!r} in {self.path}")
        return _row_to_memory(row)

    def list(self, *, kinds: Iterable[MemoryKind] | None = None, limit: int | None = None) -> list[Memory]:
        """Newest first."""
        stmt = select(*_COLUMNS).order_by(memories.c.seq.desc())
        if kinds is not None:
            stmt = stmt.where(memories.c.kind.in_([MemoryKind(k).value for k in kinds]))
        if limit is not None:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [_row_to_memory(r) for r in conn.execute(stmt)]

    def count(self) -> int:
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM memories").scalar_one()

    def intents(self) -> list[Memory]:
        return self.list(kinds=[MemoryKind.intent])

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.list())

    # -- retrieval --------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        k: int = 5,
        kinds: Iterable[MemoryKind] | None = None,
        min_score: float = 0.0,
        now: datetime | None = None,
        touch: bool = True,
    ) -> list[Hit]:
        """The ``k`` best memories for ``query``: FTS5 and embedding candidates merged, scored by
        relevance, kind, recency and confidence. Expired intents are left out; the hits' last-used
        time is set to now unless ``touch`` is False."""
        now = now or utcnow()
        wanted = {MemoryKind(x) for x in kinds} if kinds is not None else None
        lexical: dict[int, float] = {}
        expr = fts_query(query)
        if expr is not None:
            with self.engine.connect() as conn:
                lexical = {r.seq: -r.bm25 for r in conn.execute(_fts_rows(expr, scored=True, limit=CANDIDATES * 4))}
        semantic: dict[int, float] = {}
        index = self.vector_index() if self.embedder is not None else None
        qvec = None
        if index is not None and len(index):
            qvec = self.embedder.encode_query(query)  # type: ignore[union-attr]
            semantic = dict(index.top(qvec, CANDIDATES, wanted))
        seqs = set(lexical) | set(semantic)
        if not seqs:
            return []
        stmt = select(*_COLUMNS).where(memories.c.seq.in_(seqs))
        if wanted is not None:
            stmt = stmt.where(memories.c.kind.in_([k.value for k in wanted]))
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        best_lexical = max(lexical.values(), default=0.0) or 1.0
        hits = []
        for row in rows:
            memory = _row_to_memory(row)
            if memory.expired(now):
                continue
            lex = max(lexical.get(row.seq, 0.0), 0.0) / best_lexical
            sem = semantic[row.seq] if row.seq in semantic else (index.similarity(row.seq, qvec) if qvec is not None else 0.0)
            score = final_score(memory, lex, sem, with_embeddings=qvec is not None, now=now)
            if score >= min_score and score > 0:
                hits.append(Hit(memory=memory, score=round(score, 6), lexical=round(lex, 6), semantic=round(sem, 6)))
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        hits = hits[:k]
        if touch:
            self.touch([h.memory.id for h in hits], now)
        return hits

    def generation(self) -> int:
        """Bumped by every insert, delete and change of text, kind or embedding, in any process."""
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT value FROM memory_meta WHERE key = 'generation'").scalar_one()

    def vector_index(self) -> VectorIndex | None:
        """The in-memory vector index, rebuilt when the store changed; embeds the rows that
        have no vector yet (loading the model if need be). None without an embedder."""
        if self.embedder is None:
            return None
        if self._index is not None and self.generation() == self._index_generation:
            return self._index
        self.embed_missing()
        generation = self.generation()
        name = self.embedder.name
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(memories.c.seq, memories.c.kind, memories.c.embedding).where(memories.c.embedding_model == name).order_by(memories.c.seq)
            ).all()
        dim = len(rows[0].embedding) // 4 if rows else 1
        self._index = VectorIndex.build([r.seq for r in rows], [MemoryKind(r.kind) for r in rows], [r.embedding for r in rows], dim)
        self._index_generation = generation
        return self._index

    def embed_missing(self, batch: int = 256) -> int:
        """Compute and store the vectors of rows that have none (or another model's)."""
        if self.embedder is None:
            return 0
        name, done = self.embedder.name, 0
        while True:
            with self.engine.connect() as conn:
                todo = conn.execute(
                    select(memories.c.seq, memories.c.text)
                    .where((memories.c.embedding_model.is_(None)) | (memories.c.embedding_model != name))
                    .limit(batch)
                ).all()
            if not todo:
                return done
            vectors = self.embedder.encode([r.text for r in todo])
            with self.engine.begin() as conn:
                conn.execute(
                    update(memories).where(memories.c.seq == bindparam("row_seq")).values(embedding=bindparam("vec"), embedding_model=name),
                    [{"row_seq": r.seq, "vec": v.astype("float32").tobytes()} for r, v in zip(todo, vectors)],
                )
            done += len(todo)
