"""Prefix attention: packed query positions, each attending its own chain of kept segments and
then its own keys, equal one explicit softmax over exactly the keys that position may see —
through the fused CPU kernel and through the plain matrix products used elsewhere (CUDA)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from planner_runtime.planners.local import attention  # noqa: E402
from planner_runtime.planners.local.attention import Prefixes, Segment, shared_prefix_attention  # noqa: E402

KV_HEADS, GROUPS, DIM = 3, 3, 64


def segment(n: int, gen: "torch.Generator") -> Segment:
    return Segment((torch.randn(1, KV_HEADS, n, DIM, generator=gen),), (torch.randn(1, KV_HEADS, n, DIM, generator=gen),))


def qkv(gen: "torch.Generator", q: int, own: int) -> tuple:
    """Queries of every head, and the rows' own keys and values."""
    return (torch.randn(1, KV_HEADS * GROUPS, q, DIM, generator=gen), torch.randn(1, KV_HEADS, own, DIM, generator=gen),
            torch.randn(1, KV_HEADS, own, DIM, generator=gen))


def explicit(query, key, value, mask, chains: list[list[Segment]]):
    """Position by position: softmax over its chain's keys, then its own visible keys."""
    q = query.shape[2]
    out = torch.empty(1, q, KV_HEADS * GROUPS, DIM)
    for i in range(q):
        keys = torch.cat([s.keys[0][0] for s in chains[i]] + [key[0][:, mask[0, 0, i]]], dim=1)  # [kv, n, d]
        values = torch.cat([s.values[0][0] for s in chains[i]] + [value[0][:, mask[0, 0, i]]], dim=1)
        keys, values = keys.repeat_interleave(GROUPS, 0), values.repeat_interleave(GROUPS, 0)
        scores = torch.einsum("hd,hnd->hn", query[0, :, i], keys) * DIM**-0.5
        out[0, i] = torch.einsum("hn,hnd->hd", scores.softmax(-1), values)
    return out


@pytest.mark.parametrize("fused", [True, False], ids=["fused-cpu-kernel", "matrix-products"])
def test_positions_attending_their_own_chains_equal_the_explicit_softmax(fused, monkeypatch):
    if fused and attention._flash_cpu() is None:
        pytest.skip("this torch has no fused CPU attention kernel")
    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu() if fused else None)
    gen = torch.Generator().manual_seed(0)
    q, own = 6, 8
    query, key, value = qkv(gen, q, own)
    mask = torch.rand(1, 1, q, own, generator=gen) > 0.3
    mask[0, 0, torch.arange(q), torch.arange(q)] = True  # every position sees at least itself
    root, left, right, leaf = (segment(n, gen) for n in (300, 40, 75, 9))
    # a tree: root -> left -> leaf, root -> right; positions 0, 3 under left/leaf, 1, 2, 5 under right, 4 under left
    chains = [[root, left, leaf], [root, right], [root, right], [root, left, leaf], [root, left], [root, right]]
    prefixes = Prefixes((root, left, right, leaf), (None, torch.tensor([0, 3, 4]), torch.tensor([1, 2, 5]), torch.tensor([0, 3])))
    got, _ = shared_prefix_attention(SimpleNamespace(layer_idx=0), query, key, value, mask, shared_prefix=prefixes)
    want = explicit(query, key, value, mask, chains)
    assert got.shape == want.shape == (1, q, KV_HEADS * GROUPS, DIM)
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


def test_a_position_that_sees_no_own_key_attends_its_chain_alone(monkeypatch):
    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu())
    gen = torch.Generator().manual_seed(1)
    query, key, value = qkv(gen, 2, 3)
    mask = torch.tensor([[True, True, False], [False, False, False]])[None, None]
    root = segment(50, gen)
    got, _ = shared_prefix_attention(SimpleNamespace(layer_idx=0), query, key, value, mask, shared_prefix=Prefixes((root,), (None,)))
    want = explicit(query, key, value, mask, [[root], [root]])
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


def test_a_split_segment_attends_as_the_whole(monkeypatch):
    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu())
    gen = torch.Generator().manual_seed(2)
    query, key, value = qkv(gen, 4, 4)
    mask = torch.tril(torch.ones(4, 4, dtype=torch.bool))[None, None]
    whole = segment(120, gen)
    first, rest = whole.split(70)
    assert (first.length, rest.length) == (70, 50)
    module = SimpleNamespace(layer_idx=0)
    one, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=Prefixes((whole,), (None,)))
    two, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=Prefixes((first, rest), (None, None)))
    assert torch.allclose(one, two, atol=1e-5), (one - two).abs().max()


@pytest.mark.parametrize("fused", [True, False], ids=["fused-cpu-kernel", "matrix-products"])
def test_short_segments_and_a_window_equal_the_explicit_softmax(fused, monkeypatch):
    """Short tree nodes are attended together with the rows' own keys (one concatenation, a
    mask saying who sees what), and a window skips the own keys of stretches before it."""
    if fused and attention._flash_cpu() is None:
        pytest.skip("this torch has no fused CPU attention kernel")
    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu() if fused else None)
    gen = torch.Generator().manual_seed(3)
    q, own, window = 5, 9, 3
    query, key, value = qkv(gen, q, own)
    mask = torch.rand(1, 1, q, own, generator=gen) > 0.4
    mask[0, 0, torch.arange(q), window + torch.arange(q)] = True
    root, tail_a, tail_b = segment(200, gen), segment(7, gen), segment(4, gen)
    short = Segment((torch.cat([tail_a.keys[0], tail_b.keys[0]], 2),), (torch.cat([tail_a.values[0], tail_b.values[0]], 2),))
    short_seen = torch.zeros(q, 11, dtype=torch.bool)
    short_seen[[0, 1, 4], :7] = True  # positions 0, 1, 4 are under tail_a; 2, 3 under tail_b
    short_seen[[2, 3], 7:] = True
    prefixes = Prefixes((root,), (None,), window, short, short_seen)
    got, _ = shared_prefix_attention(SimpleNamespace(layer_idx=0), query, key, value, mask, shared_prefix=prefixes)
    windowed = mask.clone()
    windowed[..., :window] = False  # the window hides these keys from every query
    chains = [[root, tail_a], [root, tail_a], [root, tail_b], [root, tail_b], [root, tail_a]]
    want = explicit(query, key, value, windowed, chains)
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


def test_a_chat_without_prefixes_attends_its_cache_by_grouped_query_sdpa():
    """Several queries with a mask (forced tokens after a cached prompt): the grouped-query path
    equals the explicit softmax, without transformers' per-head copy of the cache."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    gen = torch.Generator().manual_seed(4)
    q, cached = 4, 30
    query, key, value = qkv(gen, q, cached + q)
    mask = (torch.arange(cached + q)[None, :] <= cached + torch.arange(q)[:, None])[None, None]
    module = SimpleNamespace(layer_idx=0, num_key_value_groups=GROUPS, is_causal=True)
    got, _ = shared_prefix_attention(module, query, key, value, mask)
    want = explicit(query, key, value, mask, [[] for _ in range(q)])
    stock, _ = sdpa_attention_forward(module, query, key, value, mask)
    assert torch.allclose(got, want, atol=1e-5) and torch.allclose(got, stock, atol=1e-5)
