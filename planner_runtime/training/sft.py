"""Supervised fine-tuning on stored trajectories with TRL's ``SFTTrainer``, written as a release.

The data goes in pre-tokenized (:mod:`planner_runtime.training.data`): ``input_ids`` and
``assistant_masks``, which TRL 1.16 folds into the labels (-100 where the mask is 0), so the
trainer never applies a chat template of its own and cannot render differently from the planner.
Sequences longer than ``max_length`` keep their end (the later turns, which hold most targets);
that cut is made here, as TRL's own ``keep_end`` is deprecated.

Checkpoints go to ``<home>/training/<name>/``; ``resume`` continues from the newest one. The
release folder is written beside its final place and renamed in at the end, so an interrupted
or failed run leaves no half release and never touches an existing one.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from planner_runtime.planners.chat_template import rendering_id
from planner_runtime.planners.local import model_store
from planner_runtime.planners.local.heap import return_large_blocks
from planner_runtime.planners.local.model import native_bfloat16
from planner_runtime.planners.renderings import RENDERING_FILE, RENDERINGS
from planner_runtime.planners.local.threads import intra_op_threads, use_threads
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training import TrainingError
from planner_runtime.training import data as sft_data
from planner_runtime.training import releases, sft_loss

# fewer trained tokens than this is a mistake (a filter that matched almost nothing), not a run
MIN_TRAINED_TOKENS = 8
# a fifth of the tokens of the json tool list: what makes a CPU run and a CPU step affordable
COMPACT = "compact"


@dataclass(frozen=True)
class SftOptions:
    """Hyperparameters of a run; recorded whole in the release's manifest."""

    base: str = "embedded"
    lora: bool = True
    epochs: float = 3.0
    lr: float | None = None  # None: 2e-4 for LoRA, 2e-5 for a full fine-tune
    max_steps: int | None = None
    max_length: int = 4096
    batch_size: int = 1
    grad_accum: int = 1
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    save_steps: int = 50
    seed: int = 0
    rendering: str = COMPACT  # how prompts write the tools; the release pins it (planners/renderings.py)
    # the system turn (instructions, skills, tools: most of each sequence) runs without gradient
    # (training/sft_loss.py): the same loss, 1.25-1.4x the speed and 3/4 of the memory on 2 cores
    frozen_system: bool = False
    # at most about this many tokens a step keep their activations for the backward pass; a longer
    # batch recomputes just enough layers' (training/sft_loss.py): the same gradient, bounded
    # memory. None: no bound (`train sft` bounds at 512 unless told otherwise)
    activation_tokens: int | None = None
    threads: int | None = None  # CPU threads; None: PLANNER_AGENT_THREADS, else every core this process may use

    @property
    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else (2e-4 if self.lora else 2e-5)

    def recorded(self) -> dict[str, Any]:
        out = asdict(self)
        out["lr"] = self.learning_rate
        out.pop("threads")  # where it ran, not what was trained
        out.pop("activation_tokens")  # how memory was spent: the gradient is the same
        return out


@dataclass(frozen=True)
class SftResult:
    manifest: releases.Manifest
    path: Path
    steps: int
    train_loss: float


def _placement(torch: Any, threads: int | None) -> dict[str, Any]:
    """TrainingArguments for the machine: CUDA with bf16 when present, else CPU on set threads."""
    if torch.cuda.is_available():
        return {"bf16": torch.cuda.is_bf16_supported(), "use_cpu": False}
    # set deliberately: torch's default can oversubscribe a shared machine's cores
    use_threads(torch, threads or intra_op_threads())
    return {"use_cpu": True, "bf16": False}


def _weights_dtype(torch: Any, placement: dict[str, Any], lora: bool) -> Any:
    """The dtype the model's weights load in. bfloat16 on CUDA; on a CPU with native bfloat16
    (AVX512-BF16, AMX) a LoRA's frozen base is bfloat16 too — about twice the float32 speed,
    measured on 2 cores — while peft keeps the adapter itself in float32. A full fine-tune on
    CPU stays float32: its optimizer would step bfloat16 weights."""
    if placement["bf16"] or (lora and placement["use_cpu"] and native_bfloat16(torch)):
        return torch.bfloat16
    return torch.float32


def _last_checkpoint(work: Path) -> Path | None:
    found = [p for p in work.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[-1])) if found else None


def train_sft(store: TrajectoryStore, selection: sft_data.Selection, options: SftOptions, name: str, *, home: Path,
              resume: bool = False, cache_dir: Path | None = None,
              progress: bool = True, on_data: Callable[[sft_data.SftData], None] | None = None,
              callbacks: Sequence[Any] = (), dataset: Path | None = None) -> SftResult:
    """Train release ``name`` on the trajectories ``selection`` picks from ``store``, or with
    ``dataset`` on those of a built dataset (``planner-agent data build``; ``selection`` unused).

    ``options.base`` may name a release (``release:NAME``): training goes on from it, and the
    new release records it as its parent. Everything that can refuse (the name, an existing
    release, the base, the data) is checked before the first step, and nothing stored is
    written until then. ``callbacks`` are ``transformers.TrainerCallback`` objects the trainer
    calls as it goes."""
    releases.check_new_name(name)
    final = releases.release_path(home, name)
    if final.exists():
        raise TrainingError(f"release {name!r} already exists in {final.parent}: choose another --out")
    work = home / "training" / name
    checkpoint = _last_checkpoint(work) if work.is_dir() else None
    if resume and checkpoint is None:
        raise TrainingError(f"nothing to resume: no checkpoint of {name!r} in {work}")
    if not resume and checkpoint is not None:
        raise TrainingError(f"{work} holds checkpoints of an unfinished run of {name!r}: add --resume to continue it")
    if options.rendering not in RENDERINGS:
        raise TrainingError(f"rendering {options.rendering!r}: choose {' or '.join(RENDERINGS)}")
    base = releases.base_path(options.base, home, cache_dir)
    parent = releases.parent_of(options.base)
    built = None
    if dataset is not None:
        trajectories, built = sft_data.from_dataset(store, dataset)
    else:
        trajectories = sft_data.select(store, selection)

    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    data = sft_data.build(trajectories, tokenizer, min_trained_tokens=MIN_TRAINED_TOKENS, rendering=options.rendering)
    if on_data is not None:
        on_data(data)
    placement = _placement(torch, options.threads)
    # sequences of every length allocate activations of every size: glibc would keep each freed
    # block in its arenas (a 2-epoch CPU run grew past 8 GB); held at 1 MiB they go back
    return_large_blocks()
    with model_store.quiet_progress_bars():
        model = model_store.load_causal_lm(base, dtype=_weights_dtype(torch, placement, options.lora))
    trainer = _trainer(model, tokenizer, data, options, work, placement, progress, callbacks)
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if resume else None)
    recipe = None if built is None else {"name": built.recipe_name, "sha256": built.recipe_sha256, "dataset_sha256": built.sha256,
                                         "rows": len(built.rows)}
    manifest = _write_release(trainer, tokenizer, data, selection, options, name, base, home, parent, recipe)
    shutil.rmtree(work, ignore_errors=True)  # the release holds the result; checkpoints were for resuming
    return SftResult(manifest=manifest, path=final, steps=result.global_step, train_loss=result.training_loss)


def _trainer(model: Any, tokenizer: Any, dataset: sft_data.SftData, options: SftOptions, work: Path,
             placement: dict[str, Any], progress: bool, callbacks: Sequence[Any] = (), *,
             kept_logits: bool = True) -> Any:
    """The trainer of a run; ``kept_logits=False`` keeps TRL's own loss (for side-by-side timing)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    peft_config = None
    if options.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=options.lora_rank, lora_alpha=options.lora_alpha, lora_dropout=options.lora_dropout,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    steps_per_epoch = math.ceil(len(dataset.sequences) / (options.batch_size * options.grad_accum))
    args = SFTConfig(
        output_dir=str(work), num_train_epochs=options.epochs, max_steps=options.max_steps or -1,
        learning_rate=options.learning_rate, per_device_train_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum, max_length=None,
        save_strategy="steps", save_steps=max(1, min(options.save_steps, steps_per_epoch)), save_total_limit=2,
        logging_steps=1, report_to=[], seed=options.seed, disable_tqdm=not progress,
        # a CPU run is slow enough without recomputing activations; memory is small at these lengths
        gradient_checkpointing=False, dataloader_num_workers=0, **placement,
    )
    rows = Dataset.from_list(dataset.rows(options.max_length))
    trainer_class = (sft_loss.kept_logits_trainer(SFTTrainer, frozen_system=options.frozen_system,
                                                 activation_tokens=options.activation_tokens)
                     if kept_logits else SFTTrainer)
    return trainer_class(model=model, args=args, train_dataset=rows, processing_class=tokenizer,
                         peft_config=peft_config, callbacks=list(callbacks))


def _write_release(trainer: Any, tokenizer: Any, dataset: sft_data.SftData, selection: sft_data.Selection,
                   options: SftOptions, name: str, base: Path, home: Path, parent: str | None,
                   recipe: dict[str, Any] | None = None) -> releases.Manifest:
    def manifest(folder: Path) -> releases.Manifest:
        return releases.Manifest(
            name=name, kind="lora" if options.lora else "full",
            base=releases.BaseModelRef(spec=options.base, name=base.name, sha256=releases.weights_sha256(base)),
            weights_sha256=releases.weights_sha256(folder),
            data={"selection": None if recipe else selection.to_json(), **({"recipe": recipe} if recipe else {}),
                  "dataset_sha256": dataset.sha256(), "trajectories": dataset.trajectories,
                  "sequences": len(dataset.sequences), "tokens": dataset.tokens, "trained_tokens": dataset.trained_tokens,
                  "masked_turns": dataset.masked_turns},
            hyperparameters=options.recorded(), rendering=rendering_id(options.rendering), parent=parent,
        )

    return write_release(home, name, trainer.model, tokenizer, lora=options.lora, rendering=options.rendering,
                         manifest_for=manifest)


def write_release(home: Path, name: str, model: Any, tokenizer: Any, *, lora: bool, rendering: str,
                  manifest_for: Callable[[Path], releases.Manifest]) -> releases.Manifest:
    """Write release ``name`` from a trained model: its weights (a LoRA's adapter only, halved to
    bfloat16), the tokenizer, the rendering it was trained on, and the manifest ``manifest_for``
    makes of the folder once the weights are in it. The folder is written beside its final
    place and renamed in at the end, so a failure leaves no half release."""
    final = releases.release_path(home, name)
    tmp = final.with_name(final.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        model.save_pretrained(tmp)  # a PeftModel writes only its adapter
        if lora:
            _halve_adapter(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / RENDERING_FILE).write_text(rendering + "\n", encoding="utf-8")
        manifest = manifest_for(tmp)
        releases.write_manifest(tmp, manifest)
        tmp.replace(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _halve_adapter(folder: Path) -> None:
    """Store the adapter's float32 weights as bfloat16: half the bytes (what a shipped release
    weighs), and no change a bfloat16 or float32 merge can see beyond rounding; peft loads them
    back as float32."""
    import torch
    from safetensors.torch import load_file, save_file

    for path in folder.glob("adapter_model*.safetensors"):
        tensors = load_file(path)
        save_file({k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in tensors.items()}, path,
                  metadata={"format": "pt"})
