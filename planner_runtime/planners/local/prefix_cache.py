"""Prompt KV kept between a local planner's calls, one slot per conversation.

Collection runs several episodes over one shared planner, and their turns interleave. A single
kept cache holds whichever episode spoke last, so each turn that follows another episode's turn
computes its whole prompt again. Here each slot keeps the KV of one conversation's last call, and
a call starts from the slot sharing the longest start with its prompt. When the prompt continues
that slot (the next turn of the same conversation) the slot is taken over and cut back to the
shared part; when it only shares a start (another episode with the same system prompt and tools)
the shared part is copied, so that episode's history is not cut away. Past ``slots``
conversations, or ``budget_bytes`` of buffers, the least recently used slots go.

Not thread-safe by itself: the planner calls it under the lock that serialises its model calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from typing import Any, Callable, Sequence

# A prompt continues a slot when it keeps all of the slot's prompt but this many tokens: the next
# turn re-renders the previous answer, and the tokens at the seam may come out differently.
SEAM = 8


@dataclass(eq=False)
class _Slot:
    cache: Any
    ids: list[int]  # the tokens whose KV ``cache`` holds
    prompt: int  # how many of ``ids`` were the prompt (the rest was generated)
    used: int


class PrefixCache:
    """Up to ``slots`` KV caches, each with the tokens it holds; ``fresh`` makes an empty one."""

    def __init__(self, fresh: Callable[[], Any], *, slots: int = 8, budget_bytes: int | None = 1 << 30) -> None:
        if slots < 1:
            raise ValueError("a prefix cache needs at least one slot")
        self.fresh = fresh
        self.slots = slots
        self.budget_bytes = budget_bytes
        self._slots: list[_Slot] = []
        self._clock = count(1)

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def nbytes(self) -> int:
        return sum(cache_bytes(s.cache) for s in self._slots)

    def clear(self) -> None:
        self._slots = []

    def take(self, ids: Sequence[int], room: int = 0) -> tuple[Any, int]:
        """A cache holding the longest kept prefix of ``ids`` (at most all but the last token,
        which must run to give logits), and that prefix's length; an empty cache and 0 if none.
        A copied prefix goes into buffers of ``room`` positions. The cache is the caller's until
        :meth:`put`."""
        best, reused = None, 0
        for slot in self._slots:
            n = shared_length(slot.ids, ids)
            if n > reused:
                best, reused = slot, n
        reused = min(reused, len(ids) - 1)
        if best is None or reused <= 0:
            return self.fresh(), 0
        if reused >= best.prompt - SEAM or not copyable(best.cache):
            self._slots.remove(best)
            cut(best.cache, reused)
            return best.cache, reused
        best.used = next(self._clock)  # still another conversation's, and it was useful
        return self._copy(best.cache, reused, room), reused

    def put(self, cache: Any, ids: Sequence[int], prompt: int) -> None:
        """Keep ``cache`` (holding ``ids``, the first ``prompt`` of them the prompt) for later calls;
        the oldest slots go past the limits, never the one just kept."""
        self._slots.append(_Slot(cache, list(ids), prompt, next(self._clock)))
        self._slots.sort(key=lambda s: s.used)
        while len(self._slots) > self.slots:
            self._slots.pop(0)
        if self.budget_bytes is not None:
            while len(self._slots) > 1 and self.nbytes > self.budget_bytes:
                self._slots.pop(0)

    def _copy(self, cache: Any, tokens: int, room: int) -> Any:
        copy = self.fresh()
        for source, target in zip(cache.layers, copy.layers):
            if hasattr(target, "reserve"):
                target.reserve(room)  # allocated once, before the copy, not grown after it
            target.update(source.keys[..., :tokens, :], source.values[..., :tokens, :])
        return copy


def copyable(cache: Any) -> bool:
    """Whether every layer keeps every position, so its first ``n`` keys are positions 0 to n-1
    (a sliding-window layer keeps only the last ones)."""
    return all(not getattr(layer, "is_sliding", False) and getattr(layer, "keys", None) is not None
               for layer in cache.layers)


def cache_bytes(cache: Any) -> int:
    """Bytes a cache's buffers take, reserved room included."""
    total = 0
    for layer in cache.layers:
        sized = getattr(layer, "nbytes", None)
        if sized is not None:
            total += sized()
        elif getattr(layer, "keys", None) is not None:
            total += layer.keys.nbytes + layer.values.nbytes
    return total


def shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens ``a`` and ``b`` share from the start."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def cut(cache: Any, tokens: int) -> None:
    """Keep the first ``tokens`` positions of ``cache``."""
    surplus = cache.get_seq_length() - tokens
    if surplus > 0:
        cache.crop(-surplus)  # negative: remove from the end, in every 5.x release
