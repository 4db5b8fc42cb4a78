"""A step's token ids as the store keeps them: the prompt as a suffix of an earlier turn's, packed.

In a multi-turn chat the prompt of turn i starts with what turn i-1 read and answered (its
prompt and completion ids), so a whole prompt per step would make an episode's tokens grow with
the square of its length. :func:`pack` keeps how many leading ids the prompt shares with the
referenced step's prompt + completion, and only the ids after them; :func:`unpack` rebuilds the
whole :class:`~planner_runtime.contract.TurnTokens` from that and the referenced ids. Ids are
little-endian uint32, logprobs float64 (exactly the floats given), the sampled mask one byte per
token. A record no blob can hold (an id outside uint32) is left to the step's JSON instead.
"""

from __future__ import annotations

import struct
from typing import Sequence

from planner_runtime.contract import TurnTokens
from planner_runtime.errors import StoreError

VERSION = 1
# version, referenced step index (-1: none), shared ids, then counts: prompt suffix, completion,
# logprobs, sampled mask, tokenizer name bytes.
_HEAD = struct.Struct("<BiIIIIIH")
_ID_MAX = 2**32 - 1


def packable(tokens: TurnTokens) -> bool:
    """Whether :func:`pack` can hold ``tokens`` (every id a uint32, a short tokenizer name)."""
    ids = tokens.prompt_ids + tokens.completion_ids
    return (not ids or (min(ids) >= 0 and max(ids) <= _ID_MAX)) and len(tokens.tokenizer.encode()) < 2**16


def shared_prefix(ids: Sequence[int], earlier: Sequence[int]) -> int:
    """How many leading ids ``ids`` and ``earlier`` have in common."""
    n = min(len(ids), len(earlier))
    if tuple(ids[:n]) == tuple(earlier[:n]):  # the usual case, compared at C speed
        return n
    for i in range(n):
        if ids[i] != earlier[i]:
            return i
    return n


def pack(tokens: TurnTokens, ref: int, earlier: Sequence[int]) -> bytes:
    """``tokens`` with its prompt stored after the ids it shares with ``earlier`` (the prompt and
    completion ids of step ``ref``; ``ref`` -1 and ``earlier`` empty when there is none)."""
    shared = shared_prefix(tokens.prompt_ids, earlier) if ref >= 0 else 0
    suffix = tokens.prompt_ids[shared:]
    name = tokens.tokenizer.encode()
    head = _HEAD.pack(VERSION, ref if shared else -1, shared, len(suffix), len(tokens.completion_ids),
                      len(tokens.logprobs), len(tokens.sampled), len(name))
    return b"".join((
        head,
        name,
        struct.pack(f"<{len(suffix)}I", *suffix),
        struct.pack(f"<{len(tokens.completion_ids)}I", *tokens.completion_ids),
        struct.pack(f"<{len(tokens.logprobs)}d", *tokens.logprobs),
        bytes(tokens.sampled),
    ))


def reference(blob: bytes) -> int:
    """The step index whose ids ``blob`` extends, or -1."""
    return _head(blob)[1]


def unpack(blob: bytes, earlier: Sequence[int]) -> TurnTokens:
    """The whole record from ``blob`` and ``earlier``, the ids of the step :func:`reference` names."""
    version, ref, shared, n_suffix, n_completion, n_logprobs, n_sampled, n_name = _head(blob)
    if len(earlier) < shared:
        raise StoreError(f"token record refers to {shared} ids of step {ref}, which has {len(earlier)}")
    at = _HEAD.size
    name = blob[at : at + n_name].decode()
    at += n_name
    suffix = struct.unpack_from(f"<{n_suffix}I", blob, at)
    at += 4 * n_suffix
    completion = struct.unpack_from(f"<{n_completion}I", blob, at)
    at += 4 * n_completion
    logprobs = struct.unpack_from(f"<{n_logprobs}d", blob, at)
    at += 8 * n_logprobs
    sampled = tuple(bool(b) for b in blob[at : at + n_sampled])
    return TurnTokens(prompt_ids=tuple(earlier[:shared]) + suffix, completion_ids=completion, logprobs=logprobs,
                      sampled=sampled, tokenizer=name)


def _head(blob: bytes) -> tuple[int, ...]:
    if len(blob) < _HEAD.size or blob[0] != VERSION:
        raise StoreError(f"unknown token record format {blob[:1]!r}")
    return _HEAD.unpack_from(blob)
