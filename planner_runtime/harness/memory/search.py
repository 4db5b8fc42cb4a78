"""Hybrid retrieval over a memory file: FTS5 BM25 and MiniLM vectors, merged and weighted.

:class:`MemoryStore` adds ranked search to :class:`~planner_runtime.harness.memory.rows.MemoryRows`.
A search takes FTS5 candidates (bounded work even for words in thousands of rows) and the
nearest vectors from an in-memory index (rebuilt when the file's generation changes, embedding
rows that have no vector yet), then ranks the union by
:func:`~planner_runtime.harness.memory.ranking.relevance` times
:func:`~planner_runtime.harness.memory.ranking.memory_weight`. Candidates are scored from their
raw columns and full records are built only for the hits. A new query is embedded on the
embedder's query thread while FTS5 runs on the caller's (see
:mod:`~planner_runtime.harness.memory.embeddings`). Without the embedding package (or with
``embedder=None``) retrieval is FTS5 only and the model is never loaded.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Iterable, Literal

from sqlalchemy import DateTime, bindparam, select, update
from sqlalchemy.engine import Connection

from planner_runtime.contract import utcnow
from planner_runtime.harness.memory.embeddings import Embedder, default_embedder, query_vector_soon
from planner_runtime.harness.memory.records import Hit, Memory, MemoryKind
from planner_runtime.harness.memory.ranking import VectorIndex, match_expr, memory_weight, query_terms, relevance
from planner_runtime.harness.memory.rows import RECORD_COLUMNS, MemoryRows, row_to_memory, memories
from planner_runtime.sqlite_file import aware

CANDIDATES = 50  # taken from each of FTS5 and the vector index before the final ranking
COMMON_ROWS = 2000  # a word in this many rows is too common to score every match of
RECENT_SCAN = 1000  # with only common words, the newest matches scored
TERM_COUNTS_KEPT = 10_000  # words whose match counts are remembered
_GENERATION_AND_LAST = "SELECT (SELECT value FROM memory_meta WHERE key = 'generation'), (SELECT max(seq) FROM memories)"
_COUNT_CAPPED = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
_COLUMNS = [c.name for c in RECORD_COLUMNS]
_ID, _KIND, _CONFIDENCE, _CREATED, _LAST_USED, _EXPIRES = (_COLUMNS.index(x) for x in ("id", "kind", "confidence", "created_at", "last_used_at", "expires_at"))
_DATETIMES = frozenset(c.name for c in RECORD_COLUMNS if isinstance(c.type, DateTime))


def _when(stored: str | datetime) -> datetime:
    """A datetime column as SQLAlchemy writes it to SQLite (ISO text, UTC), aware."""
    return aware(stored if isinstance(stored, datetime) else datetime.fromisoformat(stored))


def _record(raw: tuple) -> Memory:
    """A memory from a raw row of :data:`_COLUMNS`."""
    values = {name: _when(v) if name in _DATETIMES and v is not None else v for name, v in zip(_COLUMNS, raw)}
    return row_to_memory(SimpleNamespace(**values))


class MemoryStore(MemoryRows):
    """A user's memories with ranked retrieval. ``embedder="auto"`` uses the offline MiniLM
    package when it is installed; ``None`` keeps retrieval to FTS5 alone."""

    def __init__(self, path: Path | str, *, embedder: Embedder | None | Literal["auto"] = "auto") -> None:
        super().__init__(path)
        self._embedder_choice = embedder
        self.embedder: Embedder | None = None
        self._index: VectorIndex | None = None
        self._index_generation = -1
        self._counts: dict[str, int] = {}
        self._counts_generation = -1

    def open(self) -> MemoryStore:
        super().open()
        self.embedder = default_embedder() if self._embedder_choice == "auto" else self._embedder_choice  # type: ignore[assignment]
        return self

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
        index = self.vector_index() if self.embedder is not None else None
        pending = query_vector_soon(self.embedder, query) if index is not None and len(index) else None  # type: ignore[arg-type]
        semantic: dict[int, float] = {}
        with self.engine.connect() as conn:
            try:  # while the query is embedded: FTS5, and the lexical candidates' rows and weights
                lexical = self._lexical(conn, query, wanted)
                weighed = self._weighed(conn, lexical.keys(), wanted, now)
            finally:
                qvec = pending.result() if pending is not None else None
            if qvec is not None:
                semantic = dict(index.top(qvec, CANDIDATES, wanted))  # type: ignore[union-attr]
                semantic.update(index.similarities([seq for seq in lexical if seq not in semantic], qvec))  # type: ignore[union-attr]
                weighed.update(self._weighed(conn, semantic.keys() - lexical.keys(), wanted, now))
        best_lexical = max(lexical.values(), default=0.0) or 1.0
        scored = []
        for seq, (weight, raw) in weighed.items():
            lex = max(lexical.get(seq, 0.0), 0.0) / best_lexical
            sem = semantic.get(seq, 0.0)
            score = relevance(lex, sem, with_embeddings=qvec is not None) * weight
            if score >= min_score and score > 0:
                scored.append((-score, raw[_ID], raw, lex, sem))
        scored.sort(key=lambda item: item[:2])
        hits = [Hit(memory=_record(raw), score=round(-neg, 6), lexical=round(lex, 6), semantic=round(sem, 6)) for neg, _, raw, lex, sem in scored[:k]]
        if touch:
            self.touch([h.memory.id for h in hits], now)
        return hits

    @classmethod
    def _weighed(cls, conn: Connection, seqs: Iterable[int], wanted: set[MemoryKind] | None, now: datetime) -> dict[int, tuple[float, tuple]]:
        """{seq: (weight by kind, recency and confidence, raw row)} of the candidates that have
        not expired."""
        out = {}
        for raw in cls._candidate_rows(conn, set(seqs), wanted) if seqs else ():
            expires = raw[_EXPIRES]
            if expires is None or _when(expires) > now:
                out[raw[0]] = (memory_weight(MemoryKind(raw[_KIND]), raw[_CONFIDENCE], _when(raw[_LAST_USED] or raw[_CREATED]), now), raw)
        return out

    @staticmethod
    def _candidate_rows(conn: Connection, seqs: set[int], wanted: set[MemoryKind] | None) -> list[tuple]:
        """The record columns of the candidates as SQLite stores them, in one query: SQLAlchemy's
        row processing and pydantic records for a hundred candidates cost more than scoring them."""
        sql = f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE seq IN ({', '.join('?' for _ in seqs)})"
        params: list = list(seqs)
        if wanted is not None:
            sql += f" AND kind IN ({', '.join('?' for _ in wanted)})"
            params += [k.value for k in wanted]
        return conn.exec_driver_sql(sql, tuple(params)).all()

    def _lexical(self, conn: Connection, query: str, wanted: set[MemoryKind] | None) -> dict[int, float]:
        """FTS5 candidates as {seq: BM25 (higher is better)}. Scoring every row a common word
        matches would cost milliseconds per thousand rows, so in a large store words found in
        COMMON_ROWS rows or more are left out when a rarer word is there to rank by, and when
        none is, only the newest RECENT_SCAN matches are scored."""
        terms = query_terms(query)
        if not terms:
            return {}
        newest_only = False
        generation, last_seq = conn.exec_driver_sql(_GENERATION_AND_LAST).one()
        if (last_seq or 0) > COMMON_ROWS:
            counts = self._term_counts(conn, terms, generation)
            rare = [t for t in terms if 0 < counts[t] < COMMON_ROWS]
            terms, newest_only = (rare, False) if rare else ([t for t in terms if counts[t]], True)
            if not terms:
                return {}
        inner = "SELECT rowid AS seq, bm25(memories_fts) AS bm25 FROM memories_fts WHERE memories_fts MATCH ?"
        if newest_only:
            inner += f" ORDER BY rowid DESC LIMIT {RECENT_SCAN}"
        kind_filter, kind_params = self._kind_filter(conn, wanted)
        sql = f"SELECT f.seq, f.bm25 FROM ({inner}) AS f{kind_filter} ORDER BY f.bm25 LIMIT {CANDIDATES}"
        return {seq: -bm25 for seq, bm25 in conn.exec_driver_sql(sql, (match_expr(terms), *kind_params))}

    def _term_counts(self, conn: Connection, terms: list[str], generation: int) -> dict[str, int]:
        """How many rows each term matches, capped at COMMON_ROWS; kept until the store
        changes, since the same words come back in query after query."""
        if generation != self._counts_generation or len(self._counts) > TERM_COUNTS_KEPT:
            self._counts, self._counts_generation = {}, generation
        for term in terms:
            if term not in self._counts:
                self._counts[term] = conn.exec_driver_sql(_COUNT_CAPPED, (match_expr([term]), COMMON_ROWS)).scalar_one()
        return {term: self._counts[term] for term in terms}

    @staticmethod
    def _kind_filter(conn: Connection, wanted: set[MemoryKind] | None) -> tuple[str, list[str]]:
        """The clause keeping the FTS5 matches ``f`` of the wanted kinds, and its parameters.
        The triggers keep every FTS5 row in ``memories``, so without a filter nothing is
        joined; when the other kinds have few rows (all but intents, as an episode's context
        asks) they are left out through the kind index; otherwise each match is looked up in
        the table, which costs twice what scoring the match does."""
        if wanted is None or len(wanted) == len(MemoryKind):
            return "", []
        others = [k.value for k in MemoryKind if k not in wanted]
        marks = ", ".join("?" for _ in others)
        few = conn.exec_driver_sql(f"SELECT count(*) FROM (SELECT 1 FROM memories WHERE kind IN ({marks}) LIMIT {COMMON_ROWS})", tuple(others)).scalar_one()
        if few < COMMON_ROWS:
            return f" WHERE f.seq NOT IN (SELECT seq FROM memories WHERE kind IN ({marks}))", others
        kept = [k.value for k in wanted]
        return f" JOIN memories AS m ON m.seq = f.seq WHERE m.kind IN ({', '.join('?' for _ in kept)})", kept

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
