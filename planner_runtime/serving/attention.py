"""Shared-prefix attention: many rows attend to one copy of their common prompt start.

Concurrent planner requests share a long start (system prompt and tool schemas, thousands of
tokens). Copying its KV cache to every row of a batch multiplies both memory and the bytes each
decode step reads by the batch width. Here the prefix stays one row wide: every row's queries
attend to it together (the batch folded into the query dimension, so each key and value is read
once per step) and to the row's own keys, and one softmax runs over both parts — the same
arithmetic as attending to a per-row copy, without the copy.

It plugs into transformers' attention registry under :data:`NAME`. Calls that pass no
``shared_prefix`` (the single-chat planner on the same model) fall through to SDPA unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

NAME = "planner_shared_prefix"


@dataclass(frozen=True)
class SharedPrefix:
    """Per-layer keys and values of the one-row prefix (``[1, kv_heads, length, head_dim]``)
    and, optionally, which of its positions each row may see (``[rows, length]`` bool).
    ``window``: the first of the rows' own cached positions the queries may see; a chunk of one
    row's prompt skips the other rows' keys before it instead of computing scores it masks away."""

    keys: tuple["torch.Tensor", ...]
    values: tuple["torch.Tensor", ...]
    visible: "torch.Tensor | None" = None
    window: int = 0

    @classmethod
    def of(cls, cache: Any, visible: "torch.Tensor | None" = None) -> SharedPrefix:
        layers = [layer for layer in cache.layers if getattr(layer, "keys", None) is not None]
        return cls(tuple(layer.keys for layer in layers), tuple(layer.values for layer in layers), visible)

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0


@dataclass(frozen=True)
class SharedPrefixes:
    """Several one-row prefixes in one packed sequence (rows whose prompts start differently,
    such as requests offered different tools): query position ``i`` attends ``prefixes[of_query[i]]``.
    Only on the fused CPU path (:func:`several_prefixes`); ``window`` as in :class:`SharedPrefix`."""

    prefixes: tuple[SharedPrefix, ...]
    of_query: "torch.Tensor"  # long [q]
    window: int = 0
    visible: None = None

    @property
    def length(self) -> int:
        return max(p.length for p in self.prefixes)


def several_prefixes(model: Any) -> bool:
    """Whether rows of one batch may attend different prefixes on this model (installed, on a CPU
    with the fused kernel); elsewhere the batch decoder runs each prefix's rows in turn."""
    return _FLASH_CPU is not None and model.config._attn_implementation == NAME and model.device.type == "cpu"


def shared_prefix_attention(
    module: Any,
    query: "torch.Tensor",
    key: "torch.Tensor",
    value: "torch.Tensor",
    attention_mask: "torch.Tensor | None",
    scaling: float | None = None,
    dropout: float = 0.0,
    shared_prefix: SharedPrefix | None = None,
    **kwargs: Any,
) -> tuple["torch.Tensor", None]:
    """``query`` ``[rows, heads, q, d]``; ``key``/``value`` the rows' own ``[rows, kv_heads, s, d]``;
    ``attention_mask`` a bool ``[rows, 1, q, s]`` over the rows' own keys. Returns ``[rows, q, heads, d]``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if shared_prefix is None or shared_prefix.length == 0:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    if shared_prefix.window:
        key, value = key[:, :, shared_prefix.window :], value[:, :, shared_prefix.window :]
        if attention_mask is not None:
            attention_mask = attention_mask[..., shared_prefix.window :]
    rows, heads, q, dim = query.shape
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    scale = scaling if scaling is not None else dim**-0.5
    if isinstance(shared_prefix, SharedPrefixes):
        pre = _grouped_prefix_part(query, shared_prefix, module.layer_idx, scale, kv_heads)
        return _cascade(query, key, value, attention_mask, *pre, scale, kv_heads, groups), None
    pk = shared_prefix.keys[module.layer_idx][0]  # [kv_heads, P, d]
    pv = shared_prefix.values[module.layer_idx][0]
    out_dtype = query.dtype
    # Half-precision products stay half: upcasting every row's keys each step cost more than the
    # batch saved. SDPA (one chat alone) accumulates in float32, so in bfloat16 a batched row may
    # differ from the chat alone at near-tied tokens; in float32 they agree.
    length = pk.shape[1]
    if shared_prefix.visible is None and query.device.type == "cpu" and _FLASH_CPU is not None:
        return _cascade(query, key, value, attention_mask, *_prefix_part(query, pk, pv, scale, kv_heads), scale, kv_heads, groups), None

    # Prefix part: all rows' queries of a kv head in one matrix, so the prefix is read once.
    folded = query.reshape(rows, kv_heads, groups * q, dim).transpose(0, 1).reshape(kv_heads, rows * groups * q, dim)
    pre = torch.bmm(folded, pk.transpose(1, 2)).view(kv_heads, rows, groups, q, length).transpose(0, 1)
    # Own part: each row against its own keys.
    own = torch.matmul(query.reshape(rows, kv_heads, groups * q, dim), key.transpose(-1, -2)).view(rows, kv_heads, groups, q, -1)
    scores = torch.cat([pre, own], dim=-1).mul_(scale)
    low = torch.finfo(scores.dtype).min
    if shared_prefix.visible is not None:
        scores[..., :length].masked_fill_(~shared_prefix.visible[:, None, None, None, :], low)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores[..., length:].masked_fill_(~attention_mask[:, :, None], low)
        else:
            scores[..., length:].add_(attention_mask[:, :, None])
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)

    pp = probs[..., :length].transpose(0, 1).reshape(kv_heads, rows * groups * q, length)
    out = torch.bmm(pp, pv).view(kv_heads, rows, groups, q, dim).transpose(0, 1)
    out = out + torch.matmul(probs[..., length:].reshape(rows, kv_heads, groups * q, -1), value).view(rows, kv_heads, groups, q, dim)
    return out.reshape(rows, heads, q, dim).transpose(1, 2).to(out_dtype).contiguous(), None


def _flash_cpu() -> Any:
    import torch

    return getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


_FLASH_CPU = None


def _prefix_part(query: "torch.Tensor", pk: "torch.Tensor", pv: "torch.Tensor", scale: float, kv_heads: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Every query against one prefix through the fused CPU kernel, with all rows' queries of
    a kv head in one sequence (the prefix is read once): output ``[rows, kv, groups*q, d]`` and
    log-sum-exp ``[rows, kv, groups*q]``, float32."""
    rows, heads, q, dim = query.shape
    gq = heads // kv_heads * q
    folded = query.reshape(rows, kv_heads, gq, dim).transpose(0, 1).reshape(1, kv_heads, rows * gq, dim).contiguous()
    out, lse = _FLASH_CPU(folded, pk[None], pv[None], 0.0, False, scale=scale)[:2]
    return out[0].view(kv_heads, rows, gq, dim).transpose(0, 1).float(), lse[0].view(kv_heads, rows, gq).transpose(0, 1).float()


def _grouped_prefix_part(query: "torch.Tensor", prefixes: SharedPrefixes, layer: int, scale: float, kv_heads: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """:func:`_prefix_part` with each query position against its own prefix: the positions of
    one prefix gathered, attended, and put back in the layout of the whole."""
    import torch

    rows, heads, q, dim = query.shape
    groups = heads // kv_heads
    out = torch.empty(rows, kv_heads, groups * q, dim, dtype=torch.float32, device=query.device)
    lse = torch.empty(rows, kv_heads, groups * q, dtype=torch.float32, device=query.device)
    for g, prefix in enumerate(prefixes.prefixes):
        at = (prefixes.of_query == g).nonzero().flatten()
        if not at.numel():
            continue
        part_out, part_lse = _prefix_part(query.index_select(2, at), prefix.keys[layer][0], prefix.values[layer][0], scale, kv_heads)
        cols = (torch.arange(groups, device=query.device)[:, None] * q + at[None, :]).flatten()  # (gqa group, position) as laid out
        out[:, :, cols], lse[:, :, cols] = part_out, part_lse
    return out, lse


def _cascade(query: "torch.Tensor", key: "torch.Tensor", value: "torch.Tensor", attention_mask: "torch.Tensor | None",
             pre_out: "torch.Tensor", pre_lse: "torch.Tensor", scale: float, kv_heads: int, groups: int) -> "torch.Tensor":
    """The prefix part (``pre_out``/``pre_lse`` from :func:`_prefix_part`, which never
    materialises the prefix scores) and the rows' own part by hand, merged by their
    log-sum-exps: the same softmax over both parts."""
    import torch

    rows, heads, q, dim = query.shape
    gq = groups * q
    grouped = query.reshape(rows, kv_heads, gq, dim)
    if key.shape[-2] == 0:
        return pre_out.reshape(rows, heads, q, dim).transpose(1, 2).to(query.dtype).contiguous()
    own = torch.matmul(grouped, key.transpose(-1, -2)).float().mul_(scale).view(rows, kv_heads, groups, q, -1)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            own.masked_fill_(~attention_mask[:, :, None], float("-inf"))
        else:
            own.add_(attention_mask[:, :, None].float())
    own = own.view(rows, kv_heads, gq, -1)
    own_lse = torch.logsumexp(own, dim=-1)  # -inf where a query sees none of its row's own keys
    seen = torch.isfinite(own_lse)
    probs = torch.exp(own - torch.where(seen, own_lse, 0.0)[..., None])
    own_out = torch.matmul(probs.to(value.dtype), value).float()  # [rows, kv, gq, d]
    top = torch.maximum(pre_lse, own_lse)
    w_pre, w_own = torch.exp(pre_lse - top), torch.where(seen, torch.exp(own_lse - top), 0.0)
    out = (pre_out * w_pre[..., None] + own_out * w_own[..., None]) / (w_pre + w_own)[..., None]
    return out.reshape(rows, heads, q, dim).transpose(1, 2).to(query.dtype).contiguous()


def install(model: Any) -> bool:
    """Register the attention and switch ``model`` to it; ``False`` when the model's attention
    does not go through transformers' registry (then batches copy the prefix per row)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    global _FLASH_CPU
    if model.config._attn_implementation not in ("sdpa", NAME):
        return False
    _FLASH_CPU = _flash_cpu()
    AttentionInterface.register(NAME, shared_prefix_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    model.config._attn_implementation = NAME
    for sub in model.modules():  # sub-configs that carry their own copy of the setting
        config = getattr(sub, "config", None)
        if config is not None and getattr(config, "_attn_implementation", None) == "sdpa":
            config._attn_implementation = NAME
    return True
