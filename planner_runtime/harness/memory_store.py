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
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.exc import SQLAlchemyError

from planner_runtime.contract import utcnow
from planner_runtime.errors import StoreError
from planner_runtime.harness.memory_embeddings import Embedder, default_embedder
from planner_runtime.harness.memory_records import Hit, Memory, MemoryKind, Trigger, TriggerKind
from planner_runtime.harness.memory_retrieval import VectorIndex, final_score, fts_query, match_expr, query_terms
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
COMMON_ROWS = 2000  # a word in this many rows is too common to score every match of
RECENT_SCAN = 1000  # with only common words, the newest matches scored
_COUNT_CAPPED = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"


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


def _fts_rows(expr: str) -> TextualSelect:
    """The seqs of the rows matching an FTS5 expression."""
    return text("SELECT rowid AS seq FROM memories_fts WHERE memories_fts MATCH :expr").bindparams(expr=expr).columns(column("seq", Integer))


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
        with self.engine.connect() as conn:
            lexical = self._lexical(conn, query, wanted)
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
        scored = []
        for row in rows:  # scored from the columns; records are built only for the hits
            if row.expires_at is not None and _aware(row.expires_at) <= now:
                continue
            lex = max(lexical.get(row.seq, 0.0), 0.0) / best_lexical
            sem = semantic[row.seq] if row.seq in semantic else (index.similarity(row.seq, qvec) if qvec is not None else 0.0)
            last = _aware(row.last_used_at or row.created_at)
            score = final_score(MemoryKind(row.kind), row.confidence, last, lex, sem, with_embeddings=qvec is not None, now=now)
            if score >= min_score and score > 0:
                scored.append((-score, row.id, row, lex, sem))
        scored.sort(key=lambda item: item[:2])
        hits = [Hit(memory=_row_to_memory(row), score=round(-neg, 6), lexical=round(lex, 6), semantic=round(sem, 6)) for neg, _, row, lex, sem in scored[:k]]
        if touch:
            self.touch([h.memory.id for h in hits], now)
        return hits

    def _lexical(self, conn: Connection, query: str, wanted: set[MemoryKind] | None) -> dict[int, float]:
        """FTS5 candidates as {seq: BM25 (higher is better)}. Scoring every row a common word
        matches would cost milliseconds per thousand rows, so in a large store words found in
        COMMON_ROWS rows or more are left out when a rarer word is there to rank by, and when
        none is, only the newest RECENT_SCAN matches are scored."""
        terms = query_terms(query)
        if not terms:
            return {}
        newest_only = False
        if (conn.exec_driver_sql("SELECT max(seq) FROM memories").scalar() or 0) > COMMON_ROWS:
            counts = {t: conn.exec_driver_sql(_COUNT_CAPPED, (match_expr([t]), COMMON_ROWS)).scalar_one() for t in terms}
            rare = [t for t in terms if 0 < counts[t] < COMMON_ROWS]
            terms, newest_only = (rare, False) if rare else ([t for t in terms if counts[t]], True)
            if not terms:
                return {}
        inner = "SELECT rowid AS seq, bm25(memories_fts) AS bm25 FROM memories_fts WHERE memories_fts MATCH ?"
        if newest_only:
            inner += f" ORDER BY rowid DESC LIMIT {RECENT_SCAN}"
        where, params = "", [match_expr(terms)]
        if wanted is not None:
            where = f" WHERE m.kind IN ({', '.join('?' for _ in wanted)})"
            params += [k.value for k in wanted]
        sql = f"SELECT f.seq, f.bm25 FROM ({inner}) AS f JOIN memories AS m ON m.seq = f.seq{where} ORDER BY f.bm25 LIMIT {CANDIDATES}"
        return {seq: -bm25 for seq, bm25 in conn.exec_driver_sql(sql, tuple(params))}

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
