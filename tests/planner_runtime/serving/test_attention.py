"""Shared-prefix attention: the fused-kernel cascade (prefix through the CPU flash kernel, merged
with each row's own keys by log-sum-exp) equals the explicit softmax over both parts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from planner_runtime.serving import attention  # noqa: E402
from planner_runtime.serving.attention import SharedPrefix, shared_prefix_attention  # noqa: E402


@pytest.mark.parametrize("own_keys", [0, 5])
def test_cascade_equals_the_explicit_softmax(own_keys, monkeypatch):
    if attention._flash_cpu() is None:
        pytest.skip("this torch has no fused CPU attention kernel")
    gen = torch.Generator().manual_seed(0)
    rows, kv_heads, groups, q, dim, prefix = 3, 3, 3, 4, 64, 300
    query = torch.randn(rows, kv_heads * groups, q, dim, generator=gen)
    key = torch.randn(rows, kv_heads, own_keys, dim, generator=gen)
    value = torch.randn(rows, kv_heads, own_keys, dim, generator=gen)
    mask = torch.ones(rows, 1, q, own_keys, dtype=torch.bool)
    if own_keys:
        mask[1] = False  # a row whose queries see none of its own keys
        mask[2, :, :, 3:] = False
    shared = SharedPrefix((torch.randn(1, kv_heads, prefix, dim, generator=gen),),
                          (torch.randn(1, kv_heads, prefix, dim, generator=gen),))
    module = SimpleNamespace(layer_idx=0)

    monkeypatch.setattr(attention, "_FLASH_CPU", None)
    explicit, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=shared)
    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu())
    fused, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=shared)
    assert fused.shape == explicit.shape == (rows, q, kv_heads * groups, dim)
    assert torch.allclose(fused, explicit, atol=1e-5), (fused - explicit).abs().max()


def test_positions_attending_different_prefixes_equal_each_prefix_alone(monkeypatch):
    if attention._flash_cpu() is None:
        pytest.skip("this torch has no fused CPU attention kernel")
    from planner_runtime.serving.attention import SharedPrefixes

    monkeypatch.setattr(attention, "_FLASH_CPU", attention._flash_cpu())
    gen = torch.Generator().manual_seed(1)
    kv_heads, groups, q, dim, own = 3, 3, 6, 64, 8
    query = torch.randn(1, kv_heads * groups, q, dim, generator=gen)
    key = torch.randn(1, kv_heads, own, dim, generator=gen)
    value = torch.randn(1, kv_heads, own, dim, generator=gen)
    mask = torch.rand(1, 1, q, own, generator=gen) > 0.3
    prefixes = tuple(
        SharedPrefix((torch.randn(1, kv_heads, n, dim, generator=gen),), (torch.randn(1, kv_heads, n, dim, generator=gen),))
        for n in (40, 75)
    )
    of_query = torch.tensor([0, 1, 1, 0, 1, 0])
    module = SimpleNamespace(layer_idx=0)
    mixed, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=SharedPrefixes(prefixes, of_query))
    for g, prefix in enumerate(prefixes):  # each position as if its whole batch attended its prefix
        alone, _ = shared_prefix_attention(module, query, key, value, mask, shared_prefix=prefix)
        at = of_query == g
        assert torch.allclose(mixed[:, at], alone[:, at], atol=1e-5), (mixed[:, at] - alone[:, at]).abs().max()
