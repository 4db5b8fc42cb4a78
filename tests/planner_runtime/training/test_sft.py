"""Real TRL training steps on the embedded model: the labels the trainer sees, a LoRA release that
changes the model's logits and loads back, and a stopped run that resumes from its checkpoint."""

from __future__ import annotations

import json

import pytest
import torch

from planner_runtime.planners.chat_template import rendering_id
from planner_runtime.planners.local.model_store import ensure_embedded_model
from planner_runtime.training import TrainingError, data, releases, sft

# a few steps at a short length: seconds on two cores
TINY = dict(lora_rank=2, lora_alpha=4, max_length=64, lr=5e-3, save_steps=1, threads=1)


def test_the_trainer_computes_loss_only_on_ok_assistant_tokens(episodes, store, tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    built = data.build(data.select(store, data.Selection()), tokenizer)
    (seq,) = built.sequences
    options = sft.SftOptions(max_steps=1, **TINY)
    model = AutoModelForCausalLM.from_pretrained(ensure_embedded_model())
    trainer = sft._trainer(model, tokenizer, built, options, tmp_path / "work", {"use_cpu": True}, progress=False)
    seen = trainer.train_dataset[0]
    labels = seen["labels"]
    # truncated from the start, so the last turns (the targets) are what is kept
    assert list(seen["input_ids"]) == list(seq.input_ids[-64:])
    assert labels == [t if m else -100 for t, m in zip(seq.input_ids[-64:], seq.assistant_masks[-64:])]
    kept = [t for t in labels if t != -100]
    assert 0 < len(kept) < len(labels) / 2
    assert tokenizer.decode(kept).startswith("<tool_call>") and '"hour": "7"' not in tokenizer.decode(kept)
    assert trainer.train().training_loss > 0


def test_the_loss_runs_the_lm_head_only_where_a_token_trains_and_equals_the_full_cross_entropy(
        episodes, store, tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    built = data.build(data.select(store, data.Selection()), tokenizer)
    options = sft.SftOptions(max_steps=1, **TINY)
    model = AutoModelForCausalLM.from_pretrained(ensure_embedded_model(), dtype=torch.float32)
    # float32 weights, and the placement train sft passes on a CPU (no bf16 mixed precision)
    trainer = sft._trainer(model, tokenizer, built, options, tmp_path / "work", {"use_cpu": True, "bf16": False},
                           progress=False)
    batch = trainer.data_collator([trainer.train_dataset[0]])
    labels = batch["labels"]
    head_rows = []
    hook = trainer.model.get_output_embeddings().register_forward_hook(lambda m, args, out: head_rows.append(args[0].shape[1]))
    loss = trainer.compute_loss(trainer.model, dict(batch))
    hook.remove()
    loss.backward()
    kept_grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.model.zero_grad()

    logits = trainer.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False).logits
    reference = torch.nn.functional.cross_entropy(logits[0, :-1].float(), labels[0, 1:], ignore_index=-100)
    reference.backward()
    trained = int((labels[0, 1:] != -100).sum())
    assert 0 < trained < labels.shape[1] / 2
    assert head_rows == [trained]  # the head saw the trained positions, not the whole sequence
    # equal up to float32 rounding (the head's product runs on fewer rows); a position off by one
    # or a different count would be off by far more
    assert loss.item() == pytest.approx(reference.item(), rel=1e-3)
    for name, p in trainer.model.named_parameters():
        if p.requires_grad:
            assert (kept_grads[name] - p.grad).norm() <= 1e-2 * p.grad.norm() + 1e-8, name


def test_a_frozen_system_turn_gives_the_same_loss_and_trains_only_through_the_conversation(
        episodes, store, tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    built = data.build(data.select(store, data.Selection()), tokenizer)
    (seq,) = built.sequences
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    system = seq.input_ids.index(im_end) + 1
    assert not any(seq.assistant_masks[:system]) and system > len(seq.input_ids) / 2  # most of it, none trained

    def step(frozen: bool):  # noqa: ANN202
        options = sft.SftOptions(max_steps=1, **{**TINY, "max_length": 4096}, frozen_system=frozen)
        model = AutoModelForCausalLM.from_pretrained(ensure_embedded_model(), dtype=torch.float32)
        trainer = sft._trainer(model, tokenizer, built, options, tmp_path / f"work-{frozen}", {"use_cpu": True, "bf16": False},
                               progress=False)
        batch = trainer.data_collator([trainer.train_dataset[0]])
        lengths = []
        hook = trainer.model.get_base_model().model.layers[0].register_forward_hook(
            lambda m, args, out: lengths.append(args[0].shape[1]))
        loss = trainer.compute_loss(trainer.model, dict(batch))
        hook.remove()
        loss.backward()
        return loss.item(), lengths, {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

    full_loss, full_runs, full_grads = step(False)
    frozen_loss, frozen_runs, frozen_grads = step(True)
    assert full_runs == [len(seq.input_ids)]
    assert frozen_runs == [system, len(seq.input_ids) - system]  # the system turn first, as a cache, then the rest
    assert frozen_loss == pytest.approx(full_loss, rel=1e-4)  # the same forward pass
    # the adapter still learns (every layer's gradient flows through the conversation), but not
    # the path through the system turn: the gradients differ
    for name, grad in frozen_grads.items():
        assert grad.norm() > 0 or "lora_A" in name, name
    assert any((frozen_grads[n] - g).norm() > 1e-3 * g.norm() for n, g in full_grads.items())


@pytest.mark.parametrize("frozen", [False, True], ids=["full-gradient", "frozen-system"])
def test_a_bound_on_kept_activations_recomputes_layers_for_the_same_loss_and_gradient(
        frozen, episodes, store, tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    built = data.build(data.select(store, data.Selection()), tokenizer)
    (seq,) = built.sequences

    def step(activation_tokens):  # noqa: ANN001, ANN202
        options = sft.SftOptions(max_steps=1, **{**TINY, "max_length": 4096}, frozen_system=frozen,
                                 activation_tokens=activation_tokens)
        model = AutoModelForCausalLM.from_pretrained(ensure_embedded_model(), dtype=torch.float32)
        trainer = sft._trainer(model, tokenizer, built, options, tmp_path / f"work-{activation_tokens}",
                               {"use_cpu": True, "bf16": False}, progress=False)
        for name, param in trainer.model.named_parameters():  # LoRA B starts at zero: give A a gradient too
            if "lora_B" in name:
                torch.nn.init.normal_(param, std=0.02)
        batch = trainer.data_collator([trainer.train_dataset[0]])
        layers = trainer.model.get_base_model().model.layers
        runs = {0: 0, len(layers) - 1: 0}  # mlp calls: a pre-hook, as a recompute stops once it has what backward needs
        hooks = [layers[i].mlp.register_forward_pre_hook(lambda m, a, i=i: runs.__setitem__(i, runs[i] + 1)) for i in runs]
        loss = trainer.compute_loss(trainer.model, dict(batch))
        loss.backward()
        for hook in hooks:
            hook.remove()
        assert "forward" not in vars(layers[0])  # the layers are themselves again after the step
        return loss.item(), runs, {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

    kept_loss, kept_runs, kept_grads = step(None)
    # a bound of a tenth of the sequence: 90% of the 30 layers recompute, the last ones keep theirs
    bound_loss, bound_runs, bound_grads = step(len(seq.input_ids) // 10)
    passes = 2 if frozen else 1  # the frozen system turn runs as its own pass first
    assert kept_runs == {0: passes, 29: passes}
    assert bound_runs == {0: passes + 1, 29: passes}  # layer 0 ran again in the backward pass
    assert bound_loss == pytest.approx(kept_loss, rel=1e-5)
    for name, grad in kept_grads.items():
        assert torch.allclose(bound_grads[name], grad, rtol=1e-3, atol=1e-6 * grad.abs().max()), name
    assert all(g.norm() > 0 for g in bound_grads.values())


def test_recomputing_layers_puts_back_a_forward_a_hook_had_set():
    from planner_runtime.training.sft_loss import _recomputing

    hooked, plain = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    hook = hooked.forward = lambda x: x * 0  # as accelerate's device hooks set an instance forward
    with _recomputing(torch.nn.ModuleList([hooked, plain]), 2):
        x = torch.ones(1, 2, requires_grad=True)
        assert torch.equal(hooked(x), torch.zeros(1, 2)) and "forward" in vars(plain)
    assert hooked.forward is hook and "forward" not in vars(plain)


def test_just_enough_layers_recompute_to_keep_the_bound():
    from planner_runtime.training.sft_loss import recomputed_layers

    assert recomputed_layers(30, 900, 1024) == 0 and recomputed_layers(30, 5000, None) == 0
    assert recomputed_layers(30, 2048, 1024) == 15  # half the layers keep their activations
    assert recomputed_layers(30, 3000, 1024) == 20  # ceil(30 * (1 - 1024/3000)) = 19.76 -> 20
    assert recomputed_layers(30, 10**6, 1) == 30


def test_the_system_cut_is_the_shortest_system_turn_of_a_batch_and_nothing_without_one():
    from planner_runtime.training.sft_loss import system_end

    ids = torch.tensor([[5, 9, 2, 9, 7], [5, 5, 5, 9, 1]])
    assert system_end(ids, 9) == 2  # row 0 closes its system turn at 1, row 1 at 3: the shorter one
    assert system_end(ids, 42) == 0 and system_end(ids, None) == 0
    assert system_end(torch.tensor([[9, 1], [1, 1]]), 9) == 0  # a row without one freezes nothing


def _logits(path, ids):  # noqa: ANN001, ANN202
    from transformers import AutoModelForCausalLM

    with torch.no_grad():
        return AutoModelForCausalLM.from_pretrained(path)(torch.tensor([ids])).logits


def test_a_lora_release_changes_the_logits_and_loads_back_as_a_model(episodes, store, tokenizer, tmp_path):
    home = tmp_path / "home"
    result = sft.train_sft(store, data.Selection(), sft.SftOptions(max_steps=3, **TINY), "alarm-1", home=home,
                           progress=False)
    assert result.steps == 3 and result.path == home / "releases" / "alarm-1"
    files = {p.name for p in result.path.iterdir()}
    assert {"adapter_model.safetensors", "adapter_config.json", "manifest.json", "tokenizer.json"} <= files
    assert not (home / "training" / "alarm-1").exists()  # checkpoints go once the release is written
    manifest = json.loads((result.path / "manifest.json").read_text())
    base = ensure_embedded_model()
    assert manifest["kind"] == "lora" and manifest["base"]["sha256"] == releases.weights_sha256(base)
    assert manifest["data"]["trajectories"] == 1 and manifest["data"]["selection"]["success"] is True
    assert manifest["hyperparameters"]["lora_rank"] == 2 and manifest["rendering"] == rendering_id("compact")
    assert manifest["bench"] == [] and manifest["approval"] is None and manifest["parent"] is None

    merged = releases.model_dir(home, "alarm-1")
    assert merged.name == "alarm-1"
    ids = tokenizer(data.full_text(episodes[0]), add_special_tokens=False).input_ids[-64:]
    before, after = _logits(base, ids), _logits(merged, ids)
    assert (after - before).abs().max() > 1e-3
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(result.path / "adapter_model.safetensors").values()} == {torch.bfloat16}
    # the planner loading the release renders its prompts as the release was trained: compact tools
    from planner_runtime.planners.local.planner import LocalPlanner

    planner = LocalPlanner(merged, threads=1).load()
    assert planner.decoding.rendering == "compact"
    (seq,) = data.sequences(episodes[0], tokenizer, "compact")
    prompt_ids, _, _ = planner.encode(episodes[0].messages_at(0), episodes[0].tools, 24)
    assert list(seq.input_ids[: len(prompt_ids)]) == prompt_ids
    assert "<tools>" not in tokenizer.decode(prompt_ids)
    with pytest.raises(TrainingError, match="already exists"):
        sft.train_sft(store, data.Selection(), sft.SftOptions(max_steps=1, **TINY), "alarm-1", home=home, progress=False)


class _StopAt:
    """Stops a run after ``step`` (Ctrl-C), and notes the first step a run takes."""

    def __init__(self, step: int | None) -> None:
        self.step, self.first = step, None

    def __getattr__(self, name: str):  # noqa: ANN204 - every other TrainerCallback event does nothing
        return lambda *args, **kwargs: None

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self.first = self.first or state.global_step
        if state.global_step == self.step:
            raise KeyboardInterrupt


def test_a_stopped_run_resumes_from_its_checkpoint(episodes, store, tmp_path):
    from transformers import TrainerCallback

    class Stop(_StopAt, TrainerCallback):
        pass

    home, options = tmp_path / "home", sft.SftOptions(max_steps=3, **TINY)
    with pytest.raises(KeyboardInterrupt):
        sft.train_sft(store, data.Selection(), options, "r", home=home, progress=False, callbacks=[Stop(2)])
    assert (home / "training" / "r" / "checkpoint-1").is_dir() and not (home / "releases" / "r").exists()
    with pytest.raises(TrainingError, match="add --resume"):
        sft.train_sft(store, data.Selection(), options, "r", home=home, progress=False)
    watch = Stop(None)
    result = sft.train_sft(store, data.Selection(), options, "r", home=home, progress=False, resume=True, callbacks=[watch])
    assert watch.first == 2 and result.steps == 3  # it went on from step 1's checkpoint, not from the start
    assert (home / "releases" / "r" / "manifest.json").is_file()
    with pytest.raises(TrainingError, match="nothing to resume"):
        sft.train_sft(store, data.Selection(), options, "r2", home=home, progress=False, resume=True)


def test_training_goes_on_from_a_release_and_records_it_as_the_parent(episodes, store, tmp_path):
    home = tmp_path / "home"
    sft.train_sft(store, data.Selection(), sft.SftOptions(max_steps=1, **TINY), "first", home=home, progress=False)
    child = sft.train_sft(store, data.Selection(), sft.SftOptions(base="release:first", max_steps=1, **TINY), "second",
                          home=home, progress=False)
    assert child.manifest.parent == "first" and child.manifest.base.spec == "release:first"
    assert child.manifest.base.sha256 == releases.weights_sha256(releases.model_dir(home, "first"))
    assert releases.model_dir(home, "second").name == "second"  # its base (the merged parent) checks out


def test_a_full_fine_tune_writes_whole_weights_the_planner_loads_as_they_are(episodes, store, tmp_path):
    home = tmp_path / "home"
    options = sft.SftOptions(lora=False, max_steps=1, max_length=64, lr=1e-3, threads=1)
    result = sft.train_sft(store, data.Selection(), options, "full-1", home=home, progress=False)
    assert result.manifest.kind == "full" and result.manifest.hyperparameters["lr"] == 1e-3
    assert (result.path / "config.json").is_file() and not (result.path / "adapter_config.json").exists()
    assert releases.model_dir(home, "full-1") == result.path
    ids = list(range(100, 132))
    assert (_logits(result.path, ids) - _logits(ensure_embedded_model(), ids)).abs().max() > 1e-4
