"""The local planner's kept prompt KV: one slot per conversation, bounded, never cut for another."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from planner_runtime.planners.local.kv_cache import growing_cache  # noqa: E402
from planner_runtime.planners.local.prefix_cache import PrefixCache, cache_bytes  # noqa: E402

CONFIG = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=8, num_attention_heads=2, num_key_value_heads=1)


def _filled(ids: list[int]):
    """A cache whose keys at each position are that position's token id (so a copy is checkable)."""
    cache = growing_cache(CONFIG)
    keys = torch.tensor(ids, dtype=torch.float32).view(1, 1, -1, 1).expand(1, 1, -1, 4).contiguous()
    for layer in cache.layers:
        layer.update(keys, -keys)
    return cache


def _kept(slots: int = 8, budget_bytes: int | None = None) -> PrefixCache:
    return PrefixCache(lambda: growing_cache(CONFIG), slots=slots, budget_bytes=budget_bytes)


def test_the_next_turn_takes_over_its_conversation_and_another_copies_only_the_shared_start():
    kept = _kept()
    a = list(range(100))
    kept.put(_filled(a), a, prompt=90)
    other = a[:40] + [1000 + i for i in range(30)]  # same system prompt and tools, another goal
    copy, reused = kept.take(other, room=80)
    assert reused == 40 and copy.get_seq_length() == 40
    assert torch.equal(copy.layers[0].keys[0, 0, :, 0], torch.arange(40, dtype=torch.float32))
    kept.put(copy, other, prompt=70)
    following = a[:88] + [2000 + i for i in range(20)]  # the answer re-rendered, then the tool's result
    mine, reused = kept.take(following)
    assert reused == 88 and len(kept) == 1  # its own history was still whole, and is now the caller's
    again, reused = kept.take(other + [5])
    assert reused == 70 and len(kept) == 0


def test_the_least_recently_used_conversation_goes_past_the_slots():
    kept = _kept(slots=2)
    chats = [[c * 100 + i for i in range(20)] for c in range(3)]
    for ids in chats:
        kept.put(_filled(ids), ids, prompt=20)
    assert len(kept) == 2
    assert kept.take(chats[0] + [7])[1] == 0  # the first went
    assert kept.take(chats[2] + [7])[1] == 20


def test_a_byte_budget_bounds_the_kept_caches_but_keeps_the_latest():
    one = cache_bytes(_filled(list(range(50))))
    kept = _kept(budget_bytes=one)
    for c in range(3):
        ids = [c * 100 + i for i in range(50)]
        kept.put(_filled(ids), ids, prompt=50)
        assert len(kept) == 1 and kept.nbytes <= one
    tiny = _kept(budget_bytes=1)
    tiny.put(_filled([1, 2, 3]), [1, 2, 3], prompt=3)
    assert tiny.take([1, 2, 3, 4])[1] == 3  # over budget on its own, still the one kept
