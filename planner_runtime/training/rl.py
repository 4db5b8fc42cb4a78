"""Online RL on the device farm: TRL's ``GRPOTrainer`` fed by farm rollouts, with CARE or vanilla GRPO.

Each optimizer step takes ``tasks_per_step`` task instances, runs ``group`` episodes of each on the
device pool through the real harness (:mod:`rollout`), and hands TRL one sequence per episode
(prompt, completion, the sampled-token mask as ``env_mask``) through its ``rollout_func``. The
rewards and advantages are :mod:`care`'s: with ``algo=grpo`` TRL's own group normalisation runs
on the composite reward (the vanilla baseline); with ``algo=care`` the trainer's advantages are
replaced by CARE's (regime per group, a floor under the std), through the overrides of TRL's
private methods in :mod:`grpo`.

The policy the rollouts sample is the model being trained (its LoRA unmerged), wrapped by
:meth:`LocalPlanner.over` anew each step, so no prompt KV of older weights is reused. With a Ray
farm the rollouts run on its device hosts instead, each step's trainable weights published to them
once (:mod:`.hosted_policy`) and the episodes coming back into the same store. The run's
folder ``<home>/training/<name>/`` holds ``steps.jsonl`` (one line a step: success rate, regimes,
reward components, advantage statistics, TRL's loss and clip fraction, tokens and steps per
episode, rollout and update time, settings and controller changes), ``rollouts.sqlite`` (every
episode, one collection a step) and the checkpoints; ``resume`` continues from the newest
checkpoint, and the step it stopped in finds its finished episodes in the store. The end is a
release (part 1's manifest, with the RL settings), its parent the release it started from.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from planner_runtime.planners.chat_template import rendering_id
from planner_runtime.planners.local import model_store
from planner_runtime.planners.local.heap import return_large_blocks
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.training import TrainingError, releases
from planner_runtime.training import sft as sft_module
from planner_runtime.training.care import Algo, CareSettings
from planner_runtime.training.controller import Controller, StepStats
from planner_runtime.training.rollout import RolloutResult, run_group_rollouts
from planner_runtime.training.grpo import grpo_trainer
from planner_runtime.training.rl_steps import STEPS_LOG, append_line, kept_log, score_step, settings_dict

ROLLOUTS = "rollouts.sqlite"


@dataclass(frozen=True)
class RlOptions:
    """A run's settings; recorded whole in the release's manifest."""

    algo: Algo = Algo.care
    source: str = releases.BUILTIN_DEFAULT  # the release it starts from (an SFT one or its descendant)
    group: int = 4  # episodes per task instance (G)
    steps: int = 20  # optimizer steps
    tasks_per_step: int = 2  # task instances per step
    lr: float = 2e-5
    lora: bool = True  # train a LoRA (a LoRA release's own adapter goes on) or, False, every weight
    lora_rank: int = 16  # for a full release, the new adapter's rank; a LoRA release trains its own
    episode_steps: int = 6  # planner turns an episode may take
    temperature: float = 1.0
    max_new_tokens: int = 96
    care: CareSettings = field(default_factory=CareSettings)
    controller_every: int = 5
    save_steps: int = 5
    seed: int = 0
    first_seed: int = 0  # instance seeds of templates with random parameters start here
    devices: int = 2  # episodes in parallel
    allow_reset: bool = False  # let task setup wipe phones that are neither virtual nor disposable
    disposable: frozenset[str] = frozenset()
    loss_type: str = "dapo"  # TRL's: tokens of the whole batch normalise the loss
    threads: int | None = None
    share_prompts: bool = False  # a step in one micro-batch, each group's prompt run once (faster, more memory)

    def check(self) -> None:
        if self.group < 2:
            raise TrainingError(f"--group {self.group}: a group needs at least 2 episodes to compare")
        if self.steps < 1 or self.tasks_per_step < 1:
            raise TrainingError("--steps and --tasks-per-step must be at least 1")
        try:
            self.care.check()
        except ValueError as exc:
            raise TrainingError(f"CARE settings: {exc}") from None

    def recorded(self) -> dict[str, Any]:
        out = asdict(self)
        out["algo"] = self.algo.value
        out.pop("threads")
        out.pop("share_prompts")  # how the same gradient was computed, not what was trained
        for where in ("devices", "allow_reset", "disposable"):
            out.pop(where)  # where it ran, not what was trained
        return out


@dataclass(frozen=True)
class RlResult:
    manifest: releases.Manifest
    path: Path
    steps: int
    run_dir: Path


def sft_ancestor(home: Path, name: str) -> str:
    """The nearest SFT release at or above ``name``; a :class:`TrainingError` when there is none
    (RL from an untrained model has almost no successes to learn from)."""
    seen: set[str] = set()
    current: str | None = name
    while current is not None and current not in seen:
        if current == releases.BASE:
            break
        seen.add(current)
        manifest = releases.load_manifest(home, current)
        if manifest.data.get("kind", "sft") == "sft" and "selection" in manifest.data:
            return current
        current = manifest.parent
    raise TrainingError(f"release {name!r} has no SFT ancestor: train one first (planner-agent train sft), "
                        "then start RL from it with --from")


def schedule(templates: Sequence[TaskSpec], options: RlOptions) -> list[TaskSpec]:
    """The task instances of every step, in order: templates shuffled once by the seed and taken
    in turn, each pass drawing the next seed of those with random parameters (reproducible, so a
    resumed run sees the same instances)."""
    if not templates:
        raise TrainingError("no task to train on: check --task and --split")
    order = list(templates)
    random.Random(options.seed).shuffle(order)
    picked = []
    for i in range(options.steps * options.tasks_per_step):
        template = order[i % len(order)]
        picked.append(template.draw(seed=options.first_seed + i // len(order)))
    return picked


@dataclass
class _Run:
    """What the trainer's hooks share within a run."""

    options: RlOptions
    settings: CareSettings
    controller: Controller | None
    instances: dict[str, TaskSpec]
    run_dir: Path
    rollout: Callable[[list[TaskSpec], int], RolloutResult]
    pending: dict[str, Any] | None = None
    advantages: list[float] = field(default_factory=list)
    scored: list[bool] = field(default_factory=list)
    rollout_ended: float = 0.0


def _rollout_func(run: _Run) -> Callable[[list[str], Any], dict[str, Any]]:
    def rollout(prompts: list[str], trainer: Any) -> dict[str, Any]:
        group = run.options.group
        keys = prompts[::group]
        if [k for k in keys for _ in range(group)] != list(prompts):
            raise TrainingError(f"the trainer's prompts are not in groups of {group}: {prompts[:8]}")
        step = trainer.state.global_step + 1
        model = trainer.model
        was_training = model.training
        model.eval()
        try:
            result = run.rollout([run.instances[k] for k in keys], step)
        finally:
            model.train(was_training)
        rewards, advantages, record = score_step(result, keys, run.options.algo, run.settings)
        record["step"] = step
        run.pending, run.advantages, run.rollout_ended = record, advantages, time.perf_counter()
        run.scored = [r is not None for r in rewards]
        episodes = [m for ms in result.groups for m in ms]
        return {"prompt_ids": [list(m.prompt_ids) for m in episodes],
                "completion_ids": [list(m.completion_ids) for m in episodes],
                "logprobs": [list(m.logprobs) for m in episodes],
                "env_mask": [list(m.env_mask) for m in episodes],
                "farm_reward": rewards}

    return rollout


def _step_logger(run: _Run) -> Any:
    """A ``TrainerCallback`` that completes the step's record with TRL's figures (loss, clip
    fraction, KL when computed), lets the controller retune, and appends the line to the log."""
    from transformers import TrainerCallback

    class StepLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            logs = logs or {}
            if run.pending is None or "loss" not in logs:  # the run's closing summary, or no rollout yet
                return
            record, run.pending = run.pending, None
            from datetime import datetime, timezone

            record.update(step=state.global_step, time=datetime.now(timezone.utc).isoformat(),
                          update_seconds=time.perf_counter() - run.rollout_ended,
                          loss=logs.get("loss"), kl=logs.get("kl"), clip_fraction=logs.get("clip_ratio/region_mean"),
                          grad_norm=logs.get("grad_norm"), entropy=logs.get("entropy"))
            changes = []
            if run.controller is not None and record["success_rate"] is not None:
                run.controller.observe(StepStats(step=state.global_step, success_rate=record["success_rate"],
                                                 regimes=record["regimes"],
                                                 output_tokens_per_episode=record["output_tokens_per_episode"] or 0.0,
                                                 steps_per_episode=record["steps_per_episode"] or 0.0))
                run.settings, changes = run.controller.update(run.settings, state.global_step)
            record["controller"] = [asdict(c) for c in changes]
            record["next_settings"] = settings_dict(run.settings)
            append_line(run.run_dir / STEPS_LOG, record)

    return StepLog()


def train_rl(options: RlOptions, name: str, *, home: Path, templates: Sequence[TaskSpec], pool: Any,
             policy: Any = None, controller: Controller | None = None, resume: bool = False,
             cache_dir: Path | None = None, progress: bool = True, callbacks: Sequence[Any] = (),
             farm: Any = None) -> RlResult:
    """Train release ``name`` from ``options.source`` by RL on ``templates``' instances, the
    episodes run on ``pool`` (a :class:`~device_farm.pool.pool.DevicePool`, open) under
    ``policy`` (deny every sensitive action by default) — or, given a ``farm`` (a
    :class:`~planner_runtime.runs.distributed.Farm` of the Ray cluster this process joined), on
    its device hosts, each step's weights published to them (:mod:`.hosted_policy`). Everything
    that can refuse is checked before the first rollout."""
    options.check()
    releases.check_new_name(name)
    final = releases.release_path(home, name)
    if final.exists():
        raise TrainingError(f"release {name!r} already exists in {final.parent}: choose another --out")
    if options.tasks_per_step > len(templates):
        raise TrainingError(f"--tasks-per-step {options.tasks_per_step} is more than the {len(templates)} task templates chosen")
    work = home / "training" / name
    checkpoint = sft_module._last_checkpoint(work) if work.is_dir() else None
    started = work.is_dir() and any(work.iterdir())
    if resume and not started:
        raise TrainingError(f"nothing to resume: no run of {name!r} in {work}")
    if not resume and started:
        raise TrainingError(f"{work} holds an unfinished run of {name!r}: add --resume to continue it")
    sft_ancestor(home, options.source)
    source = releases.load_manifest(home, options.source)
    base = releases.verify(home, source, cache_dir)
    instances = schedule(templates, options)
    settings = options.care
    if resume:  # from the last checkpoint, or from the start when it stopped before one (its rollouts kept)
        last = kept_log(work / STEPS_LOG, int(checkpoint.name.split("-")[-1]) if checkpoint else 0)
        if last and isinstance(last.get("next_settings"), dict):
            settings = replace(settings, **{k: float(v) for k, v in last["next_settings"].items()
                                            if k in ("low", "high", "progress_weight", "cost_weight")})

    import torch
    from transformers import AutoTokenizer
    from peft import LoraConfig, PeftModel

    from planner_runtime.trajectories.store import TrajectoryStore

    work.mkdir(parents=True, exist_ok=True)
    placement = sft_module._placement(torch, options.threads)
    return_large_blocks()
    folder = releases.release_path(home, options.source)
    dtype = sft_module._weights_dtype(torch, placement, options.lora)
    peft_config = None
    with model_store.quiet_progress_bars():
        if not options.lora:  # every weight trains: start from the release as one merged model
            model_path = releases.model_dir(home, options.source, cache_dir)
            tokenizer = AutoTokenizer.from_pretrained(model_path)
            model = model_store.load_causal_lm(model_path, dtype=dtype)
            base_ref = source.base
        elif source.kind == "lora":
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = PeftModel.from_pretrained(model_store.load_causal_lm(base, dtype=dtype), folder, is_trainable=True)
            base_ref, model_path = source.base, base
        else:
            tokenizer = AutoTokenizer.from_pretrained(folder)
            model = model_store.load_causal_lm(folder, dtype=dtype)
            peft_config = LoraConfig(r=options.lora_rank, lora_alpha=2 * options.lora_rank, target_modules="all-linear",
                                     task_type="CAUSAL_LM")
            base_ref = releases.BaseModelRef(spec=f"release:{options.source}", name=folder.name, sha256=source.weights_sha256)
            model_path = folder
    rendering = releases.rendering(source)
    with TrajectoryStore(work / ROLLOUTS, create=True) as store:
        hosted = None if farm is None else _Hosted(farm, str(dtype).removeprefix("torch."),
                                                   (peft_config or _adapter_config(model)) if options.lora else None)
        rollout = _farm_rollouts(options, name, model, tokenizer, model_path, rendering, pool, store, policy, hosted)
        run = _Run(options, settings, controller, {t.id: t for t in instances}, work, rollout)
        trainer = grpo_trainer(model, tokenizer, [t.id for t in instances], options, work, placement, peft_config, run,
                               _rollout_func(run), progress, [_step_logger(run), *callbacks])
        result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
        manifest = _write_release(trainer, tokenizer, options, run, name, base_ref, rendering, home, templates, instances)
    for done in work.glob("checkpoint-*"):
        shutil.rmtree(done, ignore_errors=True)  # the release holds the result; the log and the rollouts stay
    return RlResult(manifest=manifest, path=final, steps=result.global_step, run_dir=work)


@dataclass(frozen=True)
class _Hosted:
    """Where the rollouts run past one host: the farm, the dtype the base loads in, the adapter's config."""

    farm: Any
    dtype: str
    lora: Any  # a peft LoraConfig, or None for a full fine-tune


def _adapter_config(model: Any) -> Any:
    """The config of a LoRA release's own adapter, as the trainer loaded it."""
    return model.peft_config["default"]


def _farm_rollouts(options: RlOptions, name: str, model: Any, tokenizer: Any, model_path: Path, rendering: str,
                   pool: Any, store: Any, policy: Any, hosted: _Hosted | None = None,
                   ) -> Callable[[list[TaskSpec], int], RolloutResult]:
    """Each step's rollouts: a planner over the current weights, sampled, one collection a step
    (on ``pool``, or with ``hosted`` on the device hosts of a Ray cluster, the weights published
    to them once a step)."""

    from planner_runtime.planners.local.model import LoadedModel
    from planner_runtime.planners.local.planner import LocalPlanner
    from planner_runtime.planners.sampled import EpisodeSeeds, SampledPlanner
    from planner_runtime.runs.collect import shared

    cache_kwarg = model_store.cache_kwarg(model)

    def rollout(instances: list[TaskSpec], step: int) -> RolloutResult:
        loaded = LoadedModel(model, tokenizer, model_path, cache_kwarg, False, rendering)
        planner = LocalPlanner.over(loaded, f"rl:{name}@{step}", max_new_tokens=options.max_new_tokens,
                                    threads=options.threads)
        one = shared(planner)
        collection = f"{name}-step{step:05d}"
        done: dict[str, int] = {}
        for item in store.completed_items(collection):
            task_id = item.rsplit("#", 1)[0]
            done[task_id] = done.get(task_id, 0) + 1
        # seeds of their own at every step (and after the episodes a resumed step already has)
        first = {t.id: step * 100_000 + done.get(t.id, 0) for t in instances}
        if hosted is not None:
            return _hosted_rollouts(options, name, model, tokenizer, model_path, rendering, store, policy, hosted,
                                    instances, step, collection, first)
        seeds = EpisodeSeeds(first)
        return run_group_rollouts(
            instances, options.group, pool=pool, store=store, collection=collection, workers=options.devices,
            planner_for=lambda t: SampledPlanner(one, temperature=options.temperature, seeds=seeds, key=t.id,
                                                 max_new_tokens=options.max_new_tokens),
            eos=tokenizer.eos_token_id, policy=policy, max_steps=options.episode_steps,
            allow_reset=options.allow_reset, disposable=options.disposable)

    return rollout


def _hosted_rollouts(options: RlOptions, name: str, model: Any, tokenizer: Any, model_path: Path, rendering: str,
                     store: Any, policy: Any, hosted: _Hosted, instances: list[TaskSpec], step: int, collection: str,
                     first: dict[str, int]) -> RolloutResult:
    """A step's rollouts on the device hosts: the weights that train put in Ray's object store
    once, every host building the same policy from them (seeds of its own on each host)."""
    from planner_runtime.runs.distributed.cluster import import_ray
    from planner_runtime.training.hosted_policy import PolicyOnHosts, trainable_state

    weights = import_ray().put(trainable_state(model, options.lora))
    planners = PolicyOnHosts(weights=weights, model_path=str(model_path), dtype=hosted.dtype, lora=hosted.lora,
                             rendering=rendering, release=f"rl:{name}@{step}", first_seeds=tuple(sorted(first.items())),
                             temperature=options.temperature, max_new_tokens=options.max_new_tokens, threads=options.threads)
    return run_group_rollouts(
        instances, options.group, pool=None, store=store, collection=collection, workers=hosted.farm.workers,
        planner_for=None, planners=planners, farm=hosted.farm, eos=tokenizer.eos_token_id, policy=policy,
        max_steps=options.episode_steps, allow_reset=options.allow_reset, disposable=options.disposable)


def _write_release(trainer: Any, tokenizer: Any, options: RlOptions, run: _Run, name: str,
                   base_ref: releases.BaseModelRef, rendering: str, home: Path, templates: Sequence[TaskSpec],
                   instances: Sequence[TaskSpec]) -> releases.Manifest:
    hyper = options.recorded()
    hyper["care"] = asdict(options.care)
    hyper["final_settings"] = settings_dict(run.settings)
    hyper["controller"] = type(run.controller).__name__ if run.controller is not None else None

    def manifest(folder: Path) -> releases.Manifest:
        return releases.Manifest(
            name=name, kind="lora" if options.lora else "full", base=base_ref, weights_sha256=releases.weights_sha256(folder),
            data={"kind": "rl", "templates": sorted({t.id for t in templates}), "instances": len(instances),
                  "episodes": len(instances) * options.group, "steps_log": str(run.run_dir / STEPS_LOG),
                  "rollouts": str(run.run_dir / ROLLOUTS)},
            hyperparameters=hyper, rendering=rendering_id(rendering), parent=options.source,
        )

    return sft_module.write_release(home, name, trainer.model, tokenizer, lora=options.lora, rendering=rendering,
                                    manifest_for=manifest)
