"""Hybrid retrieval pieces: an FTS5 query from free text, a vector index, and the final score.

Lexical matches come from SQLite FTS5 (BM25, porter stemming); semantic ones from a brute-force
cosine scan of the stored MiniLM vectors, held in memory as one float32 matrix. Past
:data:`EXACT_LIMIT` rows the scan first ranks by Hamming distance on the vectors' sign bits
(48 bytes a row, ``numpy.bitwise_count``) and rescores only the closest rows exactly — a full
float32 pass over 100,000 × 384 values costs more than the 10 ms a retrieval may take on two
cores. The final score multiplies relevance by weights for the memory's kind, how recently it
was created or used, and its confidence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from planner_runtime.harness.memory.records import MemoryKind

EXACT_LIMIT = 20_000  # rows scanned exactly; above this, sign bits pick the rows to rescore
RESCORE = 2048  # rows rescored exactly after the bit scan (~0.5 ms at 384 dimensions)
LEXICAL_WEIGHT = 0.5  # with embeddings, relevance = this * lexical + the rest * semantic
KIND_WEIGHT: dict[MemoryKind, float] = {
    MemoryKind.preference: 1.0,
    MemoryKind.fact: 1.0,
    MemoryKind.intent: 0.9,
    MemoryKind.episodic: 0.7,  # many, and about the past: a preference or fact outranks them
}
HALF_LIFE_DAYS = 30.0
RECENCY_FLOOR = 0.7  # an old memory keeps this share of its score
KIND_CODES = {kind: code for code, kind in enumerate(MemoryKind)}

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an the to of for on in my me i and or is it at by with from this that be do does did what when "
    "where who how you your please can could would will set get".split()
)


def query_terms(text: str) -> list[str]:
    """The words of a query worth matching: lower-cased, stop words dropped (unless that leaves
    none), each once."""
    words = [w.lower() for w in _WORD.findall(text)]
    return list(dict.fromkeys([w for w in words if w not in _STOP] or words))[:32]


def match_expr(terms: list[str], *, all_terms: bool = False) -> str:
    """An FTS5 MATCH expression: each word quoted (so no FTS syntax leaks in), OR- or AND-joined."""
    return f" {'AND' if all_terms else 'OR'} ".join('"' + t.replace('"', '""') + '"' for t in terms)


def fts_query(text: str, *, all_terms: bool = False) -> str | None:
    """:func:`match_expr` of the query's terms; None when no word is left."""
    terms = query_terms(text)
    return match_expr(terms, all_terms=all_terms) if terms else None


@dataclass
class VectorIndex:
    """The embedded rows of a store, as arrays. ``seqs[i]`` is the row of ``matrix[i]``."""

    seqs: np.ndarray  # int64
    kinds: np.ndarray  # int8 codes, see KIND_CODES
    matrix: np.ndarray  # float32, unit rows
    bits: np.ndarray | None = None  # uint64 sign bits, (dim / 64, rows), built past EXACT_LIMIT
    _rows_of: dict[frozenset[MemoryKind], tuple[np.ndarray, np.ndarray | None]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, seqs: list[int], kinds: list[MemoryKind], vectors: list[bytes], dim: int) -> VectorIndex:
        # copied into an array numpy allocates (it asks Linux for huge pages past 4 MB): rescoring
        # gathers rows from all over the matrix, and on 4 KB pages the TLB misses doubled its time
        matrix = np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), dim).copy() if vectors else np.zeros((0, dim), np.float32)
        index = cls(np.asarray(seqs, dtype=np.int64), np.asarray([KIND_CODES[k] for k in kinds], dtype=np.int8), matrix)
        if len(seqs) > EXACT_LIMIT and dim % 64 == 0:
            index.bits = np.ascontiguousarray(np.packbits(matrix > 0, axis=1).view(np.uint64).T)
        return index

    def __len__(self) -> int:
        return len(self.seqs)

    def similarities(self, seqs: list[int], query: np.ndarray) -> dict[int, float]:
        """Cosines of rows ``seqs`` with ``query``, for those that have a vector."""
        if not seqs or not len(self):
            return {}
        wanted = np.asarray(seqs, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.seqs, wanted), len(self.seqs) - 1)
        found = self.seqs[at] == wanted
        sims = _dot(self.matrix[at[found]], query)
        return dict(zip(wanted[found].tolist(), sims.tolist()))

    def top(self, query: np.ndarray, n: int, kinds: set[MemoryKind] | None = None) -> list[tuple[int, float]]:
        """The ``n`` most similar rows as (seq, cosine), best first."""
        if not len(self):
            return []
        rows, bits = None, self.bits
        if kinds is not None and len(kinds) < len(KIND_CODES):
            rows, subset_bits = self._subset(frozenset(kinds))
            bits = subset_bits if bits is not None else None
            if not len(rows):
                return []
        if bits is not None:
            near = nearest(hamming(bits, np.packbits(query > 0).view(np.uint64)), RESCORE)
            rows = near if rows is None else rows[near]
        candidates = self.matrix if rows is None else self.matrix[rows]
        sims = _dot(candidates, query)
        n = min(n, len(sims))
        best = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        best = best[np.argsort(-sims[best])]
        picked = best if rows is None else rows[best]
        return [(int(self.seqs[i]), float(s)) for i, s in zip(picked, sims[best])]

    def _subset(self, kinds: frozenset[MemoryKind]) -> tuple[np.ndarray, np.ndarray | None]:
        """The rows of some kinds and their sign bits, gathered once per set of kinds."""
        if kinds not in self._rows_of:
            rows = np.flatnonzero(np.isin(self.kinds, [KIND_CODES[k] for k in kinds]))
            self._rows_of[kinds] = (rows, None if self.bits is None else np.ascontiguousarray(self.bits[:, rows]))
        return self._rows_of[kinds]


def hamming(bits: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Bit differences between ``query`` (words,) and each column of ``bits`` (words, rows), as
    uint16. Word by word over contiguous rows, into reused buffers: summing a (rows, words)
    popcount along its short axis took four times as long."""
    words, count = bits.shape
    scratch, ones = np.empty(count, np.uint64), np.empty(count, np.uint8)
    distance = np.zeros(count, np.uint16)
    for w in range(words):
        np.bitwise_count(np.bitwise_xor(bits[w], query[w], out=scratch), out=ones)
        np.add(distance, ones, out=distance)
    return distance


def nearest(distance: np.ndarray, take: int) -> np.ndarray:
    """Positions of the ``take`` smallest distances, with every row tied at the cut (unless
    the tie is wider than ``take``): a histogram of the few hundred possible distances finds
    the cut in a fifth of an ``argpartition``'s time."""
    if take >= len(distance):
        return np.arange(len(distance))
    cut = int(np.searchsorted(np.cumsum(np.bincount(distance)), take))
    near = np.flatnonzero(distance <= cut)
    if len(near) > 2 * take:
        below = np.flatnonzero(distance < cut)
        near = np.concatenate([below, np.flatnonzero(distance == cut)[: take - len(below)]])
    return near


def _dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` on the calling thread, in numpy's own loops: OpenBLAS's threaded
    gemv spent milliseconds per call for its first few hundred calls here, and two threads
    of torch's stall on a busy machine (7 ms for 2,000 rows instead of 0.2)."""
    return np.einsum("ij,j->i", matrix, np.asarray(vector, dtype=np.float32))


def recency_factor(last: datetime, now: datetime) -> float:
    """1 for a memory used or made just now, falling towards RECENCY_FLOOR with a 30-day half-life."""
    days = max((now - last).total_seconds(), 0.0) / 86400
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * math.pow(0.5, days / HALF_LIFE_DAYS)


def memory_weight(kind: MemoryKind, confidence: float, last: datetime, now: datetime) -> float:
    """What a memory's relevance is multiplied by: the weights of its kind, of how recently it
    was used (``last``: last used, else created) and of its confidence."""
    return KIND_WEIGHT[kind] * recency_factor(last, now) * (0.5 + 0.5 * confidence)


def relevance(lexical: float, semantic: float, *, with_embeddings: bool) -> float:
    """BM25 scaled to the best match, blended with the cosine when there are embeddings."""
    return LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * max(semantic, 0.0) if with_embeddings else lexical

