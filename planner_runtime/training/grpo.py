"""TRL's ``GRPOTrainer`` as the farm's RL trainer: CARE's advantages in, a cheaper log-prob pass.

Two private methods of TRL 1.16 are overridden (the reason the ``train`` extra pins its minor
version, and ``tests/planner_runtime/training/test_rl.py`` checks both): with ``algo=care``,
``_generate_and_score_completions`` keeps everything TRL computed but replaces its advantages
with CARE's (regime per group, a floor under the std); with ``algo=grpo`` TRL's own group
normalisation stands, the vanilla baseline. ``_get_per_token_logps_and_entropies`` runs the LM
head over the completion only (:func:`completion_logps`), where TRL's fused head covered every
position of the sequence.

By default each episode is a micro-batch of its own. With ``share_prompts`` (``train rl
--share-prompts``) a step's episodes are one micro-batch, and as the episodes of a group open with
the same prompt (the task's first turn: about 80% of an episode's tokens on the embedded planner),
the prompt runs once a group, with its gradient, and each episode's completion attends to its keys
and values (:func:`shared_prompt_logps`): the same log-probabilities and gradient as one pass an
episode (to float rounding), for about a third of the tokens, at the cost of holding the whole
step's activations at once. TRL's "dapo" loss is normalised by the tokens of the whole step, so
one micro-batch of eight and eight of one give the same loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from planner_runtime.planners.local import model_store
from planner_runtime.training import TrainingError
from planner_runtime.training.care import Algo
from planner_runtime.training.rl_steps import stats
from planner_runtime.training.sft_loss import can_read_only, read_only_cache


def farm_reward(prompts: list[str], completions: list[Any], farm_reward: list[float | None], **_: Any) -> list[float | None]:
    """The reward the rollout already computed (``None``: unscored, so TRL leaves it out of its group)."""
    return list(farm_reward)


def _trainer_class(base: type) -> type:
    class FarmGRPOTrainer(base):  # type: ignore[misc, valid-type]
        """TRL's GRPO trainer with CARE's advantages in place of its group normalisation."""

        _farm: Any  # rl._Run

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            import torch

            out = super()._generate_and_score_completions(inputs)
            run = self._farm
            if run.options.algo is Algo.care:
                ours = torch.tensor(run.advantages, dtype=out["advantages"].dtype, device=out["advantages"].device)
                if ours.shape != out["advantages"].shape:
                    raise TrainingError(f"{ours.numel()} advantages for {out['advantages'].numel()} completions")
                out["advantages"] = ours
            elif run.pending is not None:  # vanilla: log what TRL's own normalisation gave
                run.pending["advantage"] = stats([float(a) for a, kept in zip(out["advantages"].tolist(), run.scored) if kept])
            return out

        def _get_per_token_logps_and_entropies(self, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int,
                                               batch_size: int | None = None, compute_entropy: bool = False,
                                               compute_aux_loss: bool = False, **media: Any) -> Any:
            # TRL 1.16 scores through its fused LM head, which on a CPU ran the head over every
            # position of the ~2k-token sequence (prompt included, 70 of a step's 177 s in a
            # profile); the model's own logits_to_keep runs it over the completion only
            if compute_aux_loss or any(v is not None for v in media.values()):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss, **media)
            return completion_logps(model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy)

    return FarmGRPOTrainer


def completion_logps(model: Any, input_ids: Any, attention_mask: Any, keep: int, batch_size: int | None,
                     compute_entropy: bool) -> tuple[Any, Any, None]:
    """Log-probabilities (and entropies) of the last ``keep`` tokens of each row, the LM head run
    only where they are predicted: ``(logps, entropies or None, None)`` as TRL's trainer takes them.
    Rows that share their prompt run it once (:func:`shared_prompt_logps`) where the model allows."""
    import torch

    groups = prompt_groups(input_ids, attention_mask, keep)
    if groups is not None and any(len(rows) > 1 for _, rows in groups) and can_read_only(model):
        return shared_prompt_logps(model, input_ids, attention_mask, keep, groups, compute_entropy)
    step = batch_size or input_ids.size(0)
    logps, entropies = [], []
    for start in range(0, input_ids.size(0), step):
        ids, mask = input_ids[start:start + step], attention_mask[start:start + step]
        # drop the left padding no row of this chunk needs: it costs compute, and it would shift
        # the positions away from those the rollout sampled at (a lone row starts at 0 again)
        first = int(mask.any(dim=0).nonzero()[0]) if mask.any() else 0
        ids, mask = ids[:, first:], mask[:, first:]
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=keep + 1).logits
        logits = logits[:, :-1].float()  # position t predicts token t + 1
        log_probs = torch.log_softmax(logits, dim=-1)
        logps.append(log_probs.gather(-1, ids[:, -keep:].unsqueeze(-1)).squeeze(-1))
        if compute_entropy:
            with torch.no_grad():
                entropies.append(-(log_probs.exp() * log_probs).sum(-1))
    return torch.cat(logps), (torch.cat(entropies) if compute_entropy else None), None


def prompt_groups(input_ids: Any, attention_mask: Any, keep: int) -> list[tuple[Any, list[int]]] | None:
    """The rows' prompts (the columns before the last ``keep``, left padding dropped), each with
    the rows that open with it, in first-seen order; None when some prompt is shorter than two
    tokens or has a gap (nothing to share, or not TRL's left-padded layout)."""
    cut = input_ids.size(1) - keep
    groups: dict[tuple[int, ...], list[int]] = {}
    for row in range(input_ids.size(0)):
        mask = attention_mask[row, :cut]
        first = int(mask.nonzero()[0]) if mask.any() else cut
        if cut - first < 2 or not bool(mask[first:].all()):
            return None
        groups.setdefault(tuple(input_ids[row, first:cut].tolist()), []).append(row)
    return [(input_ids.new_tensor(prompt), rows) for prompt, rows in groups.items()]


def shared_prompt_logps(model: Any, input_ids: Any, attention_mask: Any, keep: int,
                        groups: list[tuple[Any, list[int]]], compute_entropy: bool) -> tuple[Any, Any, None]:
    """:func:`completion_logps` with each group's prompt run once: all of it but its last token
    makes a key/value cache (with gradient; read-only, so every row attends to the same one), then
    each row runs that last token and its completion up to the right padding (padded positions
    get 0, as TRL masks them). The gradient through the shared keys and values sums over the rows,
    as separate passes would."""
    import torch

    cut = input_ids.size(1) - keep
    kwarg = model_store.cache_kwarg(model)
    logps: list[Any] = [None] * input_ids.size(0)
    entropies: list[Any] = [None] * input_ids.size(0)
    for prompt, rows in groups:
        head = model(input_ids=prompt[:-1].unsqueeze(0), use_cache=True, logits_to_keep=1)
        cache = head["cache"] if "cache" in head else head.past_key_values
        read_only_cache(cache)
        for row in rows:
            valid = attention_mask[row, cut:].nonzero()
            n = int(valid[-1]) + 1 if valid.numel() else 0
            completion = input_ids[row, cut:cut + n]
            tail = torch.cat([prompt[-1:], completion[:-1]]).unsqueeze(0)  # position t predicts completion token t
            mask = attention_mask.new_ones(1, prompt.numel() - 1 + tail.size(1))
            logits = model(input_ids=tail, attention_mask=mask, **{kwarg: cache}, use_cache=False).logits[0].float()
            log_probs = torch.log_softmax(logits, dim=-1)
            logps[row] = torch.nn.functional.pad(log_probs.gather(-1, completion.unsqueeze(-1)).squeeze(-1), (0, keep - n))
            if compute_entropy:
                with torch.no_grad():
                    entropies[row] = torch.nn.functional.pad(-(log_probs.exp() * log_probs).sum(-1), (0, keep - n))
    return torch.stack(logps), (torch.stack(entropies) if compute_entropy else None), None


def grpo_trainer(model: Any, tokenizer: Any, prompts: Sequence[str], options: Any, work: Path, placement: dict[str, Any],
                 peft_config: Any, run: Any, rollout_func: Callable[..., dict[str, Any]], progress: bool,
                 callbacks: Sequence[Any], micro_batch: int | None = None) -> Any:
    """TRL's GRPO trainer over ``prompts`` (one a task instance, each run ``options.group`` times),
    one optimizer step per ``options.tasks_per_step`` instances, ``micro_batch`` episodes a pass
    (default: 1, or the whole step with ``options.share_prompts``, so each group's prompt runs
    once); ``run`` is what the hooks share."""
    import warnings

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    per_step = options.group * options.tasks_per_step
    if micro_batch is None:
        micro_batch = per_step if options.share_prompts else 1
    if micro_batch < 1 or per_step % micro_batch:
        raise TrainingError(f"a micro-batch of {micro_batch} does not divide a step's {per_step} episodes")
    args = GRPOConfig(
        output_dir=str(work), max_steps=options.steps, learning_rate=options.lr,
        per_device_train_batch_size=micro_batch, gradient_accumulation_steps=per_step // micro_batch, num_generations=options.group,
        num_iterations=1, beta=0.0, loss_type=options.loss_type, scale_rewards="group",
        temperature=options.temperature, shuffle_dataset=False, logging_steps=1, save_strategy="steps",
        save_steps=options.save_steps, save_total_limit=2, report_to=[], seed=options.seed,
        disable_tqdm=not progress, gradient_checkpointing=False, dataloader_num_workers=0, log_completions=False,
        **placement,
    )
    rows = Dataset.from_list([{"prompt": p} for p in prompts])
    with warnings.catch_warnings():  # rollout_func is experimental in TRL: its minor version is pinned and tested here
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'", category=UserWarning)
        trainer = _trainer_class(GRPOTrainer)(model=model, reward_funcs=[farm_reward], args=args, train_dataset=rows,
                                             processing_class=tokenizer, peft_config=peft_config,
                                             rollout_func=rollout_func, callbacks=list(callbacks))
    trainer._farm = run
    return trainer
