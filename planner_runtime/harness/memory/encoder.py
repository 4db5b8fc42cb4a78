"""One query through MiniLM, fast: a lean BERT forward pass over the loaded model's weights.

A retrieval embeds one short query (ten-odd tokens) while the user waits. transformers'
``BertModel`` spends most of that time outside arithmetic (mask building, module hooks, three
separate Q/K/V projections, dropout no-ops), and torch's intra-op threads cost more than they
save on matrices this small — on a loaded two-core machine the spin-waiting OpenMP barrier
made one query 10–20× slower. :class:`QueryEncoder` runs the same layers with the Q/K/V
weights fused into one matrix (attention's scale folded into Q), attention as two batched
products and a softmax with no mask (one unpadded sequence needs none; torch's fused
attention took three times as long at this size), on one thread, in bfloat16 where the CPU computes it
natively: twice float32's speed, with vectors at a cosine ≥ 0.9999 to ``BertModel``'s
mean-pooled float32 output (0.99999 in float32). Batches of documents still go through
``BertModel`` (padding, masks and throughput matter there, not latency). The pass itself is
:mod:`~planner_runtime.harness.memory.encoder_pass`, scripted by TorchScript where it can be.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Sequence

import numpy as np


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on the calling thread alone for the block, then restore the thread count
    (the planner, if loaded, keeps its own)."""
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def _linear(weight: Any, bias: Any, dtype: Any) -> tuple[Any, Any, int]:
    """A linear layer's weight, bias and mode as the pass applies them (see
    ``memory_encoder_pass._linear``): float32 uses addmm over the transposed weight (mode 0);
    bfloat16 uses oneDNN's linear on a weight reordered once into its blocked layout (mode 1,
    three times float32's speed here; plain bfloat16 ``linear`` reorders on every call), or
    plain ``linear`` (mode 2) where this torch lacks that op."""
    import torch

    if dtype == torch.float32:
        return weight.t().contiguous(), bias, 0
    weight, bias = weight.to(dtype).contiguous(), bias.to(dtype)
    mkldnn = torch.ops.mkldnn
    try:
        packed = mkldnn._reorder_linear_weight(weight, None)
        probe = torch.ones(2, weight.shape[1], dtype=dtype)
        ok = torch.allclose(mkldnn._linear_pointwise(probe, packed, bias, "none", [], "").float(), torch.nn.functional.linear(probe, weight, bias).float(), rtol=0.05, atol=0.05)
    except (AttributeError, RuntimeError):
        ok = False
    return (packed, bias, 1) if ok else (weight, bias, 2)


@dataclass(frozen=True)
class QueryEncoder:
    """A BERT encoder's weights laid out for one sequence at a time; call it with token ids.
    Build it with :meth:`from_bert` from a loaded ``BertModel`` (no file is read). ``precision``
    is that of the whole pass: bfloat16 by default where the CPU has native bfloat16 (layer
    norms and softmax accumulate in float32; on real sentences the vector's cosine to float32's
    is ≥ 0.9999 and their top-10 neighbours agree), else float32. Pooling is float32.

    The fields are the lists :func:`~planner_runtime.harness.memory.encoder_pass.encode` takes:
    embeddings (word, position, the row of token type 0, the only one a single sentence uses);
    per layer the Q/K/V projections fused into one (Q pre-scaled by 1/sqrt(head size)), the
    attention's output, up (GELU) and down projections, with their biases and modes; the
    embeddings' norm, then each layer's two norms, as weight and bias."""

    embeddings: list[Any]
    weights: list[Any]
    biases: list[Any]
    norms: list[Any]
    modes: list[int]
    heads: int
    eps: float
    max_tokens: int

    @classmethod
    def from_bert(cls, model: Any, *, precision: Literal["auto", "float32", "bfloat16"] = "auto") -> QueryEncoder:
        import torch

        config = model.config
        if getattr(config, "position_embedding_type", "absolute") != "absolute" or config.hidden_act != "gelu":
            raise ValueError(f"QueryEncoder handles absolute positions and exact GELU, not {config.position_embedding_type}/{config.hidden_act}")
        if precision == "auto":  # bfloat16 where the CPU computes it natively; emulated it is slower than float32
            from planner_runtime.planners.local.model import native_bfloat16

            precision = "bfloat16" if native_bfloat16(torch) else "float32"
        dtype = getattr(torch, precision)
        state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
        prefix = "" if "embeddings.word_embeddings.weight" in state else "bert."

        def get(name: str) -> Any:
            return state[prefix + name]

        norms = [get(f"embeddings.LayerNorm.{x}").to(dtype) for x in ("weight", "bias")]
        linears = []
        for i in range(config.num_hidden_layers):
            p = f"encoder.layer.{i}."
            qkv = [f"{p}attention.self.{x}" for x in ("query", "key", "value")]
            scale = torch.ones(3 * config.hidden_size, 1)
            scale[: config.hidden_size] = (config.hidden_size // config.num_attention_heads) ** -0.5  # attention's 1/sqrt(d), on Q
            linears.append(_linear(torch.cat([get(f"{x}.weight") for x in qkv]) * scale, torch.cat([get(f"{x}.bias") for x in qkv]) * scale[:, 0], dtype))
            linears += [_linear(get(f"{p}{name}.weight"), get(f"{p}{name}.bias"), dtype) for name in ("attention.output.dense", "intermediate.dense", "output.dense")]
            norms += [get(f"{p}{name}.LayerNorm.{x}").to(dtype) for name in ("attention.output", "output") for x in ("weight", "bias")]
        embeddings = [get(f"embeddings.{name}_embeddings.weight").to(dtype) for name in ("word", "position", "token_type")]
        embeddings[2] = embeddings[2][0]
        return cls(
            embeddings=embeddings,
            weights=[w for w, _, _ in linears],
            biases=[b for _, b, _ in linears],
            norms=norms,
            modes=[m for _, _, m in linears],
            heads=config.num_attention_heads,
            eps=config.layer_norm_eps,
            max_tokens=config.max_position_embeddings,
        )

    def __call__(self, input_ids: Sequence[int]) -> np.ndarray:
        """The mean-pooled, L2-normalised last hidden state of one sequence (float32)."""
        import torch

        from planner_runtime.harness.memory.encoder_pass import query_pass

        ids = torch.as_tensor(list(input_ids)[: self.max_tokens], dtype=torch.long)
        with torch.inference_mode(), one_thread():
            return query_pass(ids, *self.flat, self.heads, self.eps).numpy().astype(np.float32, copy=False)

    @property
    def flat(self) -> tuple[list[Any], list[Any], list[Any], list[Any], list[int]]:
        """The weight lists, in the order the pass takes them."""
        return self.embeddings, self.weights, self.biases, self.norms, self.modes
