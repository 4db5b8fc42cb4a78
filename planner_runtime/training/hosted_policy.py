"""The policy being trained, built on the device hosts of a Ray cluster for one RL step.

With ``train rl --ray`` a step's rollouts run on the device hosts
(:func:`~planner_runtime.runs.distributed.collect_on_ray`), which cannot reach the model the
trainer holds in memory. So each step the trainer publishes the weights that train, once, into
Ray's object store (:func:`publish`): for a LoRA only the adapter's tensors (a few MB), for a full
fine-tune every weight. :class:`PolicyOnHosts` travels to every host pickled, holding a reference
to them; there it loads the base model from ``model_path`` — the same path on every node, so the
model must be at that path on each (the embedded model lives in the package cache, where any
install that has run it keeps it) — puts the LoRA on as the trainer did, loads the published
tensors over it, and returns the planner the local path builds: a sampled planner over
:meth:`LocalPlanner.over` of that model, with seeds no other host takes.

The weights travel as the inner model's state dict (for a LoRA, its ``lora_`` entries): the same
names whether the trainer's model is a ``PeftModel`` (a LoRA release's own adapter) or a model TRL
injected a new adapter into, so one path serves both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from planner_runtime.planners import Planner
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.training import TrainingError


def _inner(model: Any) -> Any:
    """The model whose state dict names the weights alike on the trainer and on the hosts."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def trainable_state(model: Any, lora: bool) -> dict[str, Any]:
    """The weights that train, as CPU tensors: a LoRA's adapter, or every weight."""
    state = _inner(model).state_dict()
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items() if not lora or "lora_" in k}


@dataclass(frozen=True)
class PolicyOnHosts:
    """Builds one step's policy on a device host (a
    :data:`~planner_runtime.runs.distributed.PlannersOnHost`): called with the host's index and
    the number of hosts, it returns the step's ``planner_for``."""

    weights: Any  # a Ray object reference to trainable_state's dict
    model_path: str  # the base model's directory, the same on every node
    dtype: str  # the torch dtype the trainer loaded the base in ("float32", "bfloat16")
    lora: Any  # the peft LoraConfig the adapter was made with; None: every weight is published
    rendering: str
    release: str  # the planner's release label, "rl:<run>@<step>"
    first_seeds: tuple[tuple[str, int], ...]  # (task id, its first episode seed this step)
    temperature: float
    max_new_tokens: int
    threads: int | None = None

    def __call__(self, index: int, hosts: int) -> Callable[[TaskSpec], Planner]:
        from planner_runtime.planners.local.model import LoadedModel
        from planner_runtime.planners.local.planner import LocalPlanner
        from planner_runtime.planners.sampled import EpisodeSeeds, SampledPlanner
        from planner_runtime.runs.collect import shared
        from planner_runtime.runs.distributed.cluster import import_ray

        model, tokenizer, cache_kwarg = self._model(import_ray().get(self.weights))
        loaded = LoadedModel(model, tokenizer, Path(self.model_path), cache_kwarg, False, self.rendering)
        one = shared(LocalPlanner.over(loaded, self.release, max_new_tokens=self.max_new_tokens, threads=self.threads))
        seeds = EpisodeSeeds(dict(self.first_seeds), share=(index, hosts))
        temperature, budget = self.temperature, self.max_new_tokens
        return lambda t: SampledPlanner(one, temperature=temperature, seeds=seeds, key=t.id, max_new_tokens=budget)

    def _model(self, state: dict[str, Any]) -> tuple[Any, Any, str]:
        """The base model from ``model_path`` with the adapter on and ``state`` loaded, frozen."""

        import torch
        from transformers import AutoTokenizer

        from planner_runtime.planners.local import model_store

        if not Path(self.model_path).is_dir():
            raise TrainingError(f"the model being trained is not at {self.model_path} on this host: "
                                "train rl --ray needs its base model at the same path on every node")
        with model_store.quiet_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            model = model_store.load_causal_lm(self.model_path, dtype=getattr(torch, self.dtype))
        if self.lora is not None:
            from peft import get_peft_model

            model = get_peft_model(model, self.lora)
        result = _inner(model).load_state_dict(state, strict=False)
        unset = [k for k in result.missing_keys if self.lora is None or "lora_" in k]  # a LoRA keeps the base's own
        for kind, names in (("unknown", result.unexpected_keys), ("missing", unset)):
            if names:
                raise TrainingError(f"the published weights do not fit the model at {self.model_path}: "
                                    f"{len(names)} {kind}, such as {names[0]}")
        model.eval()
        model.requires_grad_(False)
        return model, tokenizer, model_store.cache_kwarg(_inner(model))
