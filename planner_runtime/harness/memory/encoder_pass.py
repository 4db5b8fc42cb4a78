"""The arithmetic of one query through MiniLM, as a TorchScript function (see
:mod:`~planner_runtime.harness.memory.encoder` for the layout of the weights it takes).

Scripted, the pass is a quarter faster than the same operations dispatched from Python, and it
holds no GIL from the embeddings to the pooled vector, so a thread reading FTS5 meanwhile never
queues behind it. Where this torch cannot script it (TorchScript is deprecated upstream),
:data:`query_pass` is the plain Python function: the same operations, run eagerly. Imported
only once torch is needed.
"""

import warnings
from typing import Callable, List

import torch


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, mode: int, gelu: bool) -> torch.Tensor:
    """Mode 1: oneDNN's linear over a weight packed in its blocked layout (GELU fused); mode 0:
    addmm over a transposed float32 weight; mode 2: plain ``linear``."""
    if mode == 1:
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu" if gelu else "none", [], "none" if gelu else "")
    out = torch.addmm(bias, x, weight) if mode == 0 else torch.nn.functional.linear(x, weight, bias)
    return torch.nn.functional.gelu(out) if gelu else out


def encode(
    ids: torch.Tensor,
    embeddings: List[torch.Tensor],
    weights: List[torch.Tensor],
    biases: List[torch.Tensor],
    norms: List[torch.Tensor],
    modes: List[int],
    heads: int,
    eps: float,
) -> torch.Tensor:
    """The mean-pooled, L2-normalised last hidden state (float32) of one unpadded sequence.
    ``embeddings``: word, position, token type 0; ``weights``/``biases``/``modes``: Q/K/V (fused,
    Q scaled by 1/sqrt(head size)), attention out, up (GELU), down, layer after layer;
    ``norms``: weight and bias of the embeddings' norm, then of each layer's two norms."""
    n, hidden = ids.shape[0], embeddings[0].shape[1]
    x = torch.layer_norm(embeddings[0][ids] + embeddings[1][:n] + embeddings[2], [hidden], norms[0], norms[1], eps)
    for at in range(0, len(modes), 4):
        # attention in float32, with no mask (one unpadded sequence): bfloat16 bmm is slower at 12 x 10 x 32
        qkv = _linear(x, weights[at], biases[at], modes[at], False).float().view(n, 3, heads, -1).permute(1, 2, 0, 3)
        attended = torch.bmm(torch.bmm(qkv[0], qkv[1].transpose(1, 2)).softmax(-1), qkv[2]).transpose(0, 1).reshape(n, hidden).to(x.dtype)
        out = _linear(attended, weights[at + 1], biases[at + 1], modes[at + 1], False)
        x = torch.layer_norm(out.add_(x), [hidden], norms[at + 2], norms[at + 3], eps)
        up = _linear(x, weights[at + 2], biases[at + 2], modes[at + 2], True)
        down = _linear(up, weights[at + 3], biases[at + 3], modes[at + 3], False)
        x = torch.layer_norm(down.add_(x), [hidden], norms[at + 4], norms[at + 5], eps)
    pooled = x.float().mean(0)
    return pooled / pooled.norm().clamp(min=1e-12)


def _compile() -> Callable[..., torch.Tensor]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return torch.jit.script(encode)
    except Exception:  # noqa: BLE001 — a torch that cannot script this runs it eagerly
        return encode


query_pass: Callable[..., torch.Tensor] = _compile()
scripted: bool = query_pass is not encode
