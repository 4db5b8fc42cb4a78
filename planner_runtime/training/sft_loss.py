"""The SFT loss: the LM head only where a token trains, and optionally a system turn without gradient.

A trajectory's sequence is mostly prompt and its loss covers the accepted assistant turns only
(about 4% of the tokens). Two costs follow, and this module cuts both:

- **The LM head.** TRL 1.16's own loss (its "fused LM head") ran the head over every position on
  a CPU: on 2 cores it took 12 of a step's 23 seconds (torch profiler, one 2k-token demo
  sequence). Here the model's own ``logits_to_keep`` picks the positions whose next token has a
  label, and the loss is the same sum of token cross-entropies over the same count
  (``num_items_in_batch`` when the trainer gives it, like TRL's), so the gradient is unchanged.
- **The system turn** (instructions, skills and the tool list: about 70% of a demo's tokens, none
  trained). With ``frozen_system`` it runs first without gradient, as a key/value cache the rest
  of the sequence attends to, and only the conversation after it keeps activations for the
  backward pass. The forward pass, and so the loss, is the same (the adapter is active in both
  parts, as when the planner runs); the gradient leaves out the path through the system turn's
  keys and values. On 2 cores, 12 demo sequences of 1,838 tokens (``benchmarks/bench_train.py
  --quick``, side by side, bfloat16 base): 5.4–6.0 s a step against 7.5, peak RSS 3.6 GB against
  4.9 GB; on a CPU without native bfloat16 (float32 base) 7.23 s against 11.83, 3.8 GB against
  5.3 GB. A long conversation after the system turn still holds its activations (a 336-demo run
  peaked at 6.9 GB) unless ``activation_tokens`` bounds them.
- **Long conversations.** With ``activation_tokens`` a step keeps the activations of at most
  about that many tokens for the backward pass (about 2.4 MB a token in float32 over the 30
  layers: the MLP's intermediates, the keys and values repeated for grouped-query attention, and
  SDPA's float copy of the mask, per layer). When the trained-through part of a batch is longer,
  just enough decoder layers (:func:`recomputed_layers`) are checkpointed: they store only their
  input and run again in the backward pass. The loss and gradient are the same. The frozen
  system turn's cache is made read-only for this (:func:`read_only_cache`): a layer that runs twice
  must not append its keys and values twice; transformers' own gradient checkpointing drops a
  passed cache, so the layers are wrapped here, for the step only. ``bench_train --longest
  --activation-tokens 512`` (the 8 longest demos, 4,147 tokens a step, float32 on 2 cores):
  peak RSS 3,519 MiB against 5,396, 26.3 s a step against 23.5; on 12 ordinary demos
  (``--quick``) 3,060 MiB against 3,804, 7.54 s against 7.23.

The frozen system turn's own forward pass asks for one position's logits: the others (its ~2,000
positions times the 49,152-word vocabulary, 0.5 GB in float32) are never used.

Entropy and top-1 accuracy are logged from the same logits, under TRL's names.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Iterator

from planner_runtime.planners.local import model_store

IM_END = "<|im_end|>"


def system_end(input_ids: Any, im_end_id: int | None) -> int:
    """Where the shortest system turn of a batch ends (the position after its first ``<|im_end|>``);
    0 when a row has none, or the tokenizer knows no such token (then nothing is frozen)."""
    if im_end_id is None or input_ids.shape[1] == 0:
        return 0
    hits = input_ids == im_end_id
    if not bool(hits.any(dim=1).all()):
        return 0
    return int(hits.int().argmax(dim=1).min()) + 1


def recomputed_layers(layers: int, tokens: int, activation_tokens: int | None) -> int:
    """How many of ``layers`` decoder layers recompute their activations so that a batch of
    ``tokens`` trained-through tokens keeps about ``activation_tokens`` tokens' worth (None: all
    keep theirs). A recomputed layer holds only its input, a small fraction of a kept one's."""
    if not activation_tokens or tokens <= activation_tokens:
        return 0
    return min(layers, math.ceil(layers * (1 - activation_tokens / tokens)))


def kept_logits_trainer(base: type, *, frozen_system: bool = False, activation_tokens: int | None = None) -> type:
    """``base`` (TRL's ``SFTTrainer``) with this module's loss; ``activation_tokens`` bounds the
    tokens whose activations a step keeps (:func:`recomputed_layers`)."""

    class KeptLogitsSFTTrainer(base):  # type: ignore[misc, valid-type]
        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            import torch

            targets = inputs["labels"][:, 1:]
            keep = (targets != -100).any(dim=0).nonzero().squeeze(1)  # positions whose next token trains, in any row
            forward = {k: v for k, v in inputs.items() if k not in ("labels", "completion_mask", "assistant_masks")}
            cut = self._system_cut(forward["input_ids"], keep) if frozen_system else 0
            rows, length = forward["input_ids"].shape
            layers = decoder_layers(model)
            count = recomputed_layers(len(layers), rows * (length - cut), activation_tokens) if layers is not None else 0
            if count and cut and not can_read_only(model):  # its layers cannot run twice over a cache
                cut = 0
                count = recomputed_layers(len(layers), rows * length, activation_tokens)
            with _recomputing(layers, count):
                if cut:
                    outputs = _forward_after(model, forward, cut, keep, read_only=count > 0)
                    logits = outputs.logits.float()
                elif _takes_logits_to_keep(model):
                    outputs = model(**forward, use_cache=False, logits_to_keep=keep)
                    logits = outputs.logits.float()  # (batch, kept, vocab)
                else:  # a causal LM without the argument: whole logits, then the same positions
                    outputs = model(**forward, use_cache=False)
                    logits = outputs.logits[:, keep].float()
            chosen = targets[:, keep]
            valid = chosen != -100
            items = valid.sum() if num_items_in_batch is None else num_items_in_batch
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), chosen, ignore_index=-100, reduction="sum")
            loss = nll / torch.as_tensor(items, device=nll.device).clamp(min=1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes
            self._log_token_metrics(inputs, logits.detach(), chosen, valid)
            return (loss, outputs) if return_outputs else loss

        def _system_cut(self, input_ids: Any, keep: Any) -> int:
            """The position the frozen part ends at; 0 (freeze nothing) unless every kept logit
            lies after it and the model takes a cache and ``logits_to_keep``."""
            if not _takes_logits_to_keep(self.model) or keep.numel() == 0:
                return 0
            tokenizer = self.processing_class
            im_end = tokenizer.convert_tokens_to_ids(IM_END) if tokenizer is not None else None
            if im_end is None or im_end == getattr(tokenizer, "unk_token_id", None):
                return 0
            cut = system_end(input_ids, im_end)
            return cut if 0 < cut <= int(keep.min()) else 0

        def _log_token_metrics(self, inputs: dict[str, Any], logits: Any, chosen: Any, valid: Any) -> None:
            import torch

            metrics = getattr(self, "_metrics", None)
            if metrics is None:
                return
            mode = "train" if self.model.training else "eval"
            n = int(valid.sum())
            if n:
                log_probs = torch.log_softmax(logits[valid], dim=-1)
                entropy = -(log_probs.exp() * log_probs).sum(-1).mean().item()
                accuracy = (logits[valid].argmax(-1) == chosen[valid]).float().mean().item()
            else:
                entropy = accuracy = 0.0
            metrics[mode]["entropy"].append(entropy)
            metrics[mode]["mean_token_accuracy"].append(accuracy)
            if mode == "train" and "attention_mask" in inputs and hasattr(self, "_total_train_tokens"):
                self._total_train_tokens += int(inputs["attention_mask"].sum())
                metrics[mode]["num_tokens"] = [self._total_train_tokens]

    return KeptLogitsSFTTrainer


def _forward_after(model: Any, forward: dict[str, Any], cut: int, keep: Any, *, read_only: bool = False) -> Any:
    """The model over the whole batch, positions before ``cut`` without gradient: they run first
    as a cache, the rest attends to it; logits at ``keep`` (all at or after ``cut``). With
    ``read_only`` the cache keeps only the first part, so a layer may run again (recomputed)."""
    import torch

    length = forward["input_ids"].shape[1]
    head, tail = {}, {}
    for key, value in forward.items():
        if key != "attention_mask" and hasattr(value, "dim") and value.dim() >= 2 and value.shape[1] == length:
            head[key], tail[key] = value[:, :cut], value[:, cut:]
        else:
            head[key] = tail[key] = value
    if "attention_mask" in forward:
        head["attention_mask"] = forward["attention_mask"][:, :cut]
    with torch.no_grad():  # its logits are not wanted: one position's, not ~2,000 x the vocabulary
        head_out = model(**head, use_cache=True, logits_to_keep=1)
    cache = head_out["cache"] if "cache" in head_out else head_out.past_key_values
    if read_only:
        read_only_cache(cache)
    return model(**tail, **{model_store.cache_kwarg(model): cache}, use_cache=False, logits_to_keep=keep - cut)


def _takes_logits_to_keep(model: Any) -> bool:
    """Whether the causal LM under ``model`` (a peft wrapper's base, else itself) has transformers'
    ``logits_to_keep`` argument (Llama, Qwen2 and most current models do)."""
    import inspect

    return "logits_to_keep" in inspect.signature(type(_causal_lm(model)).forward).parameters


def _causal_lm(model: Any) -> Any:
    """The causal LM under ``model``: a peft wrapper's base, else the model itself."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def decoder_layers(model: Any) -> Any:
    """The decoder layers (a ``ModuleList``) of the causal LM under ``model``, or None when it
    does not keep them where Llama, Qwen2 and most current models do (``model.model.layers``)."""
    import torch

    layers = getattr(getattr(_causal_lm(model), "model", None), "layers", None)
    return layers if isinstance(layers, torch.nn.ModuleList) and len(layers) else None


@contextlib.contextmanager
def _recomputing(layers: Any, count: int) -> Iterator[None]:
    """While inside, the first ``count`` of ``layers`` run under activation checkpointing: they
    keep their inputs, and the backward pass runs them again (``torch.utils.checkpoint``, the
    non-reentrant kind, which passes keyword arguments and a cache through)."""
    if not count:
        yield
        return
    from torch.utils.checkpoint import checkpoint

    wrapped = [(layer, vars(layer).get("forward")) for layer in list(layers)[:count]]  # a hook's own forward, if any
    for layer, _ in wrapped:
        layer.forward = functools.partial(checkpoint, layer.forward, use_reentrant=False)
    try:
        yield
    finally:
        for layer, before in wrapped:
            if before is None:
                del layer.forward  # the instance attribute: the class's forward again
            else:
                layer.forward = before  # e.g. accelerate's device hook, as it was


def can_read_only(model: Any) -> bool:
    """Whether the caches this model makes are ones :func:`read_only_cache` handles (full attention
    in every layer: transformers' ``DynamicLayer``)."""
    config = getattr(model, "config", None)
    return not getattr(config, "sliding_window", None) or not getattr(config, "use_sliding_window", True)


def read_only_cache(cache: Any) -> None:
    """Make every layer of a filled ``DynamicCache`` return its keys and values followed by the
    new ones without storing the new ones: a recomputed layer then sees the same states twice."""
    import torch

    for layer in cache.layers:
        if type(layer).__name__ != "DynamicLayer":
            raise TypeError(f"cannot make a {type(layer).__name__} cache read-only")
        keys, values = layer.keys, layer.values

        def update(key_states: Any, value_states: Any, *args: Any, _keys: Any = keys, _values: Any = values,
                   **kwargs: Any) -> tuple[Any, Any]:
            return torch.cat([_keys, key_states], dim=-2), torch.cat([_values, value_states], dim=-2)

        layer.update = update
