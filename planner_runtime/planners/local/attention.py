"""Prefix attention: packed rows attend kept prompt KV that is stored once, not copied per row.

Concurrent planner requests share long prompt starts (system prompt and tool schemas, thousands
of tokens) and differ after them (other tools, another screen, another goal). The batch decoder
keeps prompt KV in a radix tree (:mod:`~planner_runtime.planners.local.prefix_tree`): each node holds
the keys and values of one stretch of tokens, and a row's prompt is the chain of nodes from the
root to its leaf. A decode step packs every live row's pending tokens into one sequence; here
each query position attends the nodes of its own row's chain (all positions of a kv head against
one node in one kernel call, so a node is read once per step however many rows share it) and then
its row's own keys. The parts are merged by their log-sum-exps: the same softmax as attending one
per-row copy of the whole prompt, without the copy.

It plugs into transformers' attention registry under :data:`NAME`. Calls that pass no
``shared_prefix`` (the single-chat planner) go to SDPA, with its grouped-query path where
transformers would copy the cache for every query head.
On a CPU with the fused flash kernel each node is attended through it; elsewhere (CUDA) through
plain matrix products, which also return the log-sum-exp the merge needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

NAME = "planner_shared_prefix"


@dataclass(frozen=True)
class Segment:
    """Per-layer keys and values of a stretch of prompt tokens (``[1, kv_heads, length, head_dim]``)."""

    keys: tuple["torch.Tensor", ...]
    values: tuple["torch.Tensor", ...]

    @classmethod
    def of(cls, cache: Any) -> Segment:
        layers = [layer for layer in cache.layers if getattr(layer, "keys", None) is not None]
        return cls(tuple(layer.keys for layer in layers), tuple(layer.values for layer in layers))

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0

    def split(self, at: int) -> tuple[Segment, Segment]:
        """The first ``at`` positions and the rest. The smaller part is copied out; the larger
        stays a view of this storage while it covers at least half of it (else it is copied too),
        so splits never keep more than twice a segment's bytes alive, however often repeated."""
        small_first = at <= self.length - at
        big = slice(at, None) if small_first else slice(None, at)
        kept = self.part(big, copy=False)
        if 2 * kept.nbytes < sum(t.untyped_storage().nbytes() for t in self.keys + self.values):
            kept = self.part(big)
        small = self.part(slice(None, at) if small_first else slice(at, None))
        return (small, kept) if small_first else (kept, small)

    @classmethod
    def concatenated(cls, parts: list[Segment]) -> Segment:
        """``parts`` one after another, in storage of their own."""
        import torch

        layers = range(len(parts[0].keys))
        return cls(tuple(torch.cat([p.keys[i] for p in parts], dim=2) for i in layers),
                   tuple(torch.cat([p.values[i] for p in parts], dim=2) for i in layers))

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    def part(self, positions: slice, copy: bool = True) -> Segment:
        """These positions, copied into storage of their own unless ``copy`` is false."""
        def take(t: "torch.Tensor") -> "torch.Tensor":
            return t[:, :, positions].clone() if copy else t[:, :, positions]

        return Segment(tuple(take(k) for k in self.keys), tuple(take(v) for v in self.values))


@dataclass(frozen=True)
class Prefixes:
    """What the packed query positions attend before their rows' own keys: ``segments[i]`` is
    seen by the positions in ``seen_by[i]`` (long ``[k]``), or by every position (``None``).
    Segments are merged in order; a position's segments are its row's chain from the root."""

    segments: tuple[Segment, ...]
    seen_by: tuple["torch.Tensor | None", ...]
    window: int = 0  # the first cached own position the queries may see (the keys before it are other rows')
    # short segments, concatenated, and which of their positions each query sees (bool ``[q, n]``):
    # attended with the rows' own keys instead of a kernel call each
    short: Segment | None = None
    short_seen: "torch.Tensor | None" = None
    # masks derived once per forward pass (every layer gets the same inputs), dropped with it
    derived: dict = field(default_factory=dict, compare=False, repr=False)


def shared_prefix_attention(
    module: Any,
    query: "torch.Tensor",
    key: "torch.Tensor",
    value: "torch.Tensor",
    attention_mask: "torch.Tensor | None",
    scaling: float | None = None,
    dropout: float = 0.0,
    shared_prefix: Prefixes | None = None,
    **kwargs: Any,
) -> tuple["torch.Tensor", None]:
    """``query`` ``[rows, heads, q, d]``; ``key``/``value`` the rows' own ``[rows, kv_heads, s, d]``;
    ``attention_mask`` a bool ``[rows, 1, q, s]`` over the rows' own keys. Returns ``[rows, q, heads, d]``."""
    if shared_prefix is None:
        return _sdpa(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
    key, value = _own_keys(key, shared_prefix, module.layer_idx), _own_keys(value, shared_prefix, module.layer_idx, values=True)
    heads, dim = query.shape[1], query.shape[3]
    kv_heads = key.shape[1]
    mask, seen, additive = _own_mask(attention_mask, shared_prefix, query, key.shape[2], heads // kv_heads)
    if not shared_prefix.segments:
        return _sdpa(module, query, key, value, mask, scaling, dropout, **kwargs)
    scale = scaling if scaling is not None else dim**-0.5
    pre_out, pre_lse = _prefix_parts(query, shared_prefix, module.layer_idx, scale, kv_heads)
    return _cascade(query, key, value, mask, seen, additive, pre_out, pre_lse, scale, kv_heads, heads // kv_heads), None


def _sdpa(module: Any, query: "torch.Tensor", key: "torch.Tensor", value: "torch.Tensor", mask: "torch.Tensor | None",
          scaling: float | None, dropout: float, **kwargs: Any) -> tuple["torch.Tensor", None]:
    """Plain attention over ``key``/``value``. transformers repeats every key and value for each
    query head sharing them when several queries come with a mask (forced tokens after a cached
    prompt, a prompt piece): a copy of the whole cache per layer, 2-4x the step. SDPA's own
    grouped-query path reads them once."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if mask is not None and query.shape[2] > 1 and key.shape[1] != query.shape[1]:
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
        return out.transpose(1, 2).contiguous(), None
    return sdpa_attention_forward(module, query, key, value, mask, scaling=scaling, dropout=dropout, **kwargs)


def _own_keys(own: "torch.Tensor", prefixes: Prefixes, layer: int, values: bool = False) -> "torch.Tensor":
    """The keys (or values) attended alongside the rows' own: the short segments, then the rows'
    own cached positions from the window on."""
    import torch

    own = own[:, :, prefixes.window :]
    if prefixes.short is None:
        return own
    short = (prefixes.short.values if values else prefixes.short.keys)[layer]
    return torch.cat([short.expand(own.shape[0], -1, -1, -1), own], dim=2)


def _own_mask(attention_mask: "torch.Tensor | None", prefixes: Prefixes, query: "torch.Tensor", keys: int, groups: int) -> tuple[Any, Any, Any]:
    """For the keys of :func:`_own_keys`: the bool mask ``[rows, 1, q, keys]``; whether each
    query sees any of them (``[rows, 1, groups*q]``); and, for the fused kernel, the mask as
    ``0``/``-inf`` in the query's dtype, repeated for the query heads sharing a kv head
    (``[rows, 1, groups*q, keys]``). Built once per forward pass: every layer gets the same inputs."""
    import torch

    known = prefixes.derived.get("own_mask")
    if known is not None and known[0] is attention_mask and known[1] == (query.dtype, query.shape[2], keys):
        return known[2]
    q = query.shape[2]
    mask = attention_mask[..., prefixes.window :] if attention_mask is not None else None
    if mask is None:
        mask = torch.ones(1, 1, q, keys - (prefixes.short.length if prefixes.short is not None else 0), dtype=torch.bool, device=query.device)
    if prefixes.short is not None:
        short = prefixes.short_seen[None, None].to(mask.device)  # type: ignore[index]
        mask = torch.cat([short.expand(mask.shape[0], 1, -1, -1), mask], dim=-1)
    seen = mask.any(-1).repeat(1, 1, groups)
    additive = None
    if _FLASH_CPU is not None and query.device.type == "cpu" and mask.dtype == torch.bool:
        additive = torch.zeros(mask.shape, dtype=query.dtype).masked_fill_(~mask, float("-inf")).repeat(1, 1, groups, 1)
    result = (mask, seen, additive)
    prefixes.derived["own_mask"] = (attention_mask, (query.dtype, q, keys), result)
    return result


def _flash_cpu() -> Any:
    import torch

    return getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


_FLASH_CPU = None


def _segment_part(query: "torch.Tensor", pk: "torch.Tensor", pv: "torch.Tensor", scale: float, kv_heads: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Every query against one segment, with all rows' queries of a kv head in one sequence (the
    segment is read once): output ``[rows, kv, groups*q, d]`` and log-sum-exp ``[rows, kv, groups*q]``,
    float32. Through the fused CPU kernel where there is one; else by matrix products."""
    import torch

    rows, heads, q, dim = query.shape
    gq = heads // kv_heads * q
    folded = query.reshape(rows, kv_heads, gq, dim).transpose(0, 1).reshape(1, kv_heads, rows * gq, dim).contiguous()
    if _FLASH_CPU is not None and query.device.type == "cpu":
        out, lse = _FLASH_CPU(folded, pk[None], pv[None], 0.0, False, scale=scale)[:2]
        out, lse = out[0].float(), lse[0].float()
    else:
        scores = torch.matmul(folded[0], pk.transpose(-1, -2)).float().mul_(scale)  # [kv, rows*gq, P]
        lse = torch.logsumexp(scores, dim=-1)
        out = torch.matmul(torch.exp(scores - lse[..., None]).to(pv.dtype), pv).float()
    return out.view(kv_heads, rows, gq, dim).transpose(0, 1), lse.view(kv_heads, rows, gq).transpose(0, 1)


def _prefix_parts(query: "torch.Tensor", prefixes: Prefixes, layer: int, scale: float, kv_heads: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Each query position against the segments it sees, merged by log-sum-exp: output
    ``[rows, kv, groups*q, d]`` and log-sum-exp ``[rows, kv, groups*q]`` (``-inf`` where a
    position sees no segment)."""
    import torch

    rows, heads, q, dim = query.shape
    groups = heads // kv_heads
    out = lse = None
    for segment, seen in zip(prefixes.segments, prefixes.seen_by):
        pk, pv = segment.keys[layer][0], segment.values[layer][0]
        if seen is None:
            part_out, part_lse = _segment_part(query, pk, pv, scale, kv_heads)
            if out is None:
                out, lse = part_out, part_lse
                continue
            cols: Any = slice(None)
        else:
            part_out, part_lse = _segment_part(query.index_select(2, seen), pk, pv, scale, kv_heads)
            cols = (torch.arange(groups, device=query.device)[:, None] * q + seen[None, :]).flatten()  # (gqa group, position) as laid out
        if out is None:
            out = torch.zeros(rows, kv_heads, groups * q, dim, dtype=torch.float32, device=query.device)
            lse = torch.full((rows, kv_heads, groups * q), float("-inf"), device=query.device)
        had_out, had_lse = out[:, :, cols], lse[:, :, cols]
        top = torch.maximum(had_lse, part_lse)  # finite: a segment is never empty
        w_had, w_part = torch.exp(had_lse - top), torch.exp(part_lse - top)
        total = w_had + w_part
        out[:, :, cols] = (had_out * w_had[..., None] + part_out * w_part[..., None]) / total[..., None]
        lse[:, :, cols] = top + torch.log(total)
    return out, lse  # type: ignore[return-value]


def _cascade(query: "torch.Tensor", key: "torch.Tensor", value: "torch.Tensor", mask: "torch.Tensor", seen: "torch.Tensor",
             additive: "torch.Tensor | None", pre_out: "torch.Tensor", pre_lse: "torch.Tensor", scale: float, kv_heads: int,
             groups: int) -> "torch.Tensor":
    """The prefix part (``pre_out``/``pre_lse`` from :func:`_prefix_parts`) and the part over
    the keys of :func:`_own_keys` (masks from :func:`_own_mask`), merged by their log-sum-exps:
    the same softmax over both parts. The own part goes through the fused kernel where there is
    one (``additive``), else by matrix products."""
    import torch

    rows, heads, q, dim = query.shape
    gq = groups * q
    grouped = query.reshape(rows, kv_heads, gq, dim)
    if key.shape[-2] == 0:
        return pre_out.reshape(rows, heads, q, dim).transpose(1, 2).to(query.dtype).contiguous()
    if additive is not None:
        own_out, own_lse = _FLASH_CPU(grouped.contiguous(), key, value, 0.0, False, attn_mask=additive, scale=scale)[:2]
        own_out = own_out.float()
        own_lse = torch.where(seen, own_lse.float(), float("-inf"))  # the kernel gives 0 where a query sees nothing
    else:
        own = torch.matmul(grouped, key.transpose(-1, -2)).float().mul_(scale).view(rows, kv_heads, groups, q, -1)
        if mask.dtype == torch.bool:
            own.masked_fill_(~mask[:, :, None], float("-inf"))
        else:
            own.add_(mask[:, :, None].float())
        own = own.view(rows, kv_heads, gq, -1)
        own_lse = torch.logsumexp(own, dim=-1)  # -inf where a query sees none of these keys
        probs = torch.exp(own - torch.where(seen, own_lse, 0.0)[..., None])
        own_out = torch.matmul(probs.to(value.dtype), value).float()  # [rows, kv, gq, d]
    top = torch.maximum(pre_lse, own_lse)
    w_pre, w_own = torch.exp(pre_lse - top), torch.where(seen, torch.exp(own_lse - top), 0.0)
    out = (pre_out * w_pre[..., None] + own_out * w_own[..., None]) / (w_pre + w_own)[..., None]
    return out.reshape(rows, heads, q, dim).transpose(1, 2).to(query.dtype).contiguous()


def install(model: Any) -> bool:
    """Register the attention and switch ``model`` to it; ``False`` when the model's attention
    does not go through transformers' registry (then the server decodes one chat at a time)."""
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
