"""``train rl``: TRL's GRPO trainer fed by farm rollouts, with CARE's advantages or TRL's own.

The trainer tests give it rollouts of fixed token sequences (no phone) and check what the
update steps on; the slow test runs the whole loop on virtual phones, is stopped after its
first checkpoint and resumed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.training import TrainingError, grpo, releases, rl
from planner_runtime.training.care import Algo, CareSettings, Outcome, score_group
from planner_runtime.training.rollout import EpisodeSequence, RolloutResult
from planner_runtime.runs.collect import Progress

TASKS = {t.id: t for t in builtin_suite().tasks}


def test_trl_is_the_minor_version_whose_private_override_point_is_tested_here():
    import trl
    from trl import GRPOTrainer

    assert trl.__version__.startswith("1.16."), "rl.py overrides GRPOTrainer._generate_and_score_completions: re-check it"
    assert callable(getattr(GRPOTrainer, "_generate_and_score_completions", None))


def test_a_release_without_an_sft_ancestor_and_bad_settings_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(TrainingError, match="no SFT ancestor"):
        rl.sft_ancestor(tmp_path, releases.BASE)
    assert rl.sft_ancestor(tmp_path, releases.BUILTIN_DEFAULT) == releases.BUILTIN_DEFAULT
    with pytest.raises(TrainingError, match="at least 2"):
        rl.RlOptions(group=1).check()
    templates = [TASKS["clock.set_alarm"]]
    with pytest.raises(TrainingError, match="more than the 1 task templates"):
        rl.train_rl(rl.RlOptions(tasks_per_step=2), "r1", home=tmp_path, templates=templates, pool=None)
    with pytest.raises(TrainingError, match="no SFT ancestor"):
        rl.train_rl(rl.RlOptions(source=releases.BASE, tasks_per_step=1), "r1", home=tmp_path, templates=templates, pool=None)
    assert not (tmp_path / "training").exists()


def test_the_schedule_is_reproducible_and_draws_new_instances_each_pass():
    templates = [TASKS["clock.set_alarm"], TASKS["food.order_dish"]]
    options = rl.RlOptions(steps=3, tasks_per_step=2, seed=4)
    first, again = rl.schedule(templates, options), rl.schedule(templates, options)
    assert [t.id for t in first] == [t.id for t in again] and len(first) == 6
    drawn = [t.id for t in first if t.id.startswith("food.order_dish")]
    assert len(set(drawn)) == 3  # a template with random parameters: a new instance each pass


def _fixed_rollouts(outcomes: list[list[Outcome | None]]):
    """A rollout function giving each group's episodes short fixed sequences and these outcomes."""
    calls = []

    def rollout(instances, step):  # noqa: ANN001, ANN202
        groups = []
        for i, _ in enumerate(instances):
            members = []
            for j, outcome in enumerate(outcomes[len(calls) * len(instances) + i]):
                completion = (40 + j, 41, 42 + j, 43)
                members.append(EpisodeSequence((1, 10, 11, 12), completion, (1, 0, 1, 1), (-1.0, 0.0, -1.0, -1.0),
                                               outcome, f"traj{j}", "" if outcome else "infra"))
            groups.append(members)
        calls.append(step)
        return RolloutResult(groups, Progress(), f"c{step}", 0.1, infra_episodes=0)

    return rollout, calls


def _trainer(tmp_path: Path, algo: Algo, outcomes, *, group: int = 4, share_prompts: bool = False):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from planner_runtime.planners.local.model_store import ensure_embedded_model

    path = ensure_embedded_model()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    from peft import LoraConfig

    options = rl.RlOptions(algo=algo, group=group, steps=1, tasks_per_step=2, share_prompts=share_prompts)
    instances = rl.schedule([TASKS["clock.set_alarm"], TASKS["clock.disable_alarm_gui"]], options)
    rollout, calls = _fixed_rollouts(outcomes)
    run = rl._Run(options, options.care, None, {t.id: t for t in instances}, tmp_path, rollout)
    (tmp_path / "w").mkdir()
    trainer = grpo.grpo_trainer(model, tokenizer, [t.id for t in instances], options, tmp_path / "w",
                                {"use_cpu": True, "bf16": False},
                                LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"),
                                run, rl._rollout_func(run), False, [rl._step_logger(run)])
    return trainer, run, calls


def _stepped_advantages(trainer) -> list[float]:
    return sorted(float(a) for batch in trainer._buffered_inputs for a in batch["advantages"].tolist())


WIN = Outcome(success=True, progress=1.0, steps=2, output_tokens=40)
SLOW_WIN = Outcome(success=True, progress=1.0, steps=3, output_tokens=60)
LOSS = Outcome(success=False, progress=0.5, steps=4, output_tokens=80)


@pytest.mark.parametrize(("algo", "share_prompts"), [(Algo.care, False), (Algo.grpo, False), (Algo.care, True)])
def test_the_update_steps_on_the_algorithms_advantages_and_unscored_episodes_carry_none(tmp_path, algo, share_prompts):
    saturated = [WIN, SLOW_WIN, WIN, SLOW_WIN]  # all succeed: only cost differs
    mixed = [WIN, LOSS, None, LOSS]  # one episode infra: out of its group, advantage 0
    trainer, run, calls = _trainer(tmp_path, algo, [saturated, mixed], share_prompts=share_prompts)
    trainer.train()
    assert calls == [1]
    # one micro-batch of the step's 8 episodes (each group's prompt run once), or 8 of one
    assert (trainer.args.per_device_train_batch_size, trainer.args.gradient_accumulation_steps) == ((8, 1) if share_prompts else (1, 8))
    assert [len(batch["advantages"]) for batch in trainer._buffered_inputs] == ([8] if share_prompts else [1] * 8)
    got = _stepped_advantages(trainer)
    settings = CareSettings()
    want = list(score_group(saturated, algo, settings).advantages)
    kept = score_group([WIN, LOSS, LOSS], algo, settings).advantages
    want += [kept[0], kept[1], 0.0, kept[2]]
    assert got == pytest.approx(sorted(want), abs=1e-3)
    if algo is Algo.care:
        # the saturated group's cost spread stays small; the mixed group's success is full size
        assert max(abs(a) for a in score_group(saturated, algo, settings).advantages) < 0.5
        assert kept[0] > 1.0
    else:
        # TRL's own normalisation: the saturated group's tiny cost differences become about +-1
        assert max(abs(a) for a in score_group(saturated, algo, settings).advantages) > 0.8
    line = json.loads((tmp_path / rl.STEPS_LOG).read_text().splitlines()[0])
    assert line["step"] == 1 and line["algo"] == algo.value and line["scored_episodes"] == 7
    assert line["success_rate"] == pytest.approx(5 / 7)
    assert math.isfinite(line["loss"]) and line["update_seconds"] >= 0
    if algo is Algo.care:
        assert line["regimes"] == {"progress": 0, "correctness": 1, "cost": 1}
    from planner_runtime.training.rl_report import read_steps

    assert read_steps(tmp_path / rl.STEPS_LOG).skipped == 0


def test_a_group_with_fewer_than_two_scored_episodes_is_skipped_and_logged(tmp_path):
    trainer, run, _ = _trainer(tmp_path, Algo.care, [[WIN, None], [None, None]], group=2)
    trainer.train()
    assert _stepped_advantages(trainer) == [0.0, 0.0, 0.0, 0.0]
    line = json.loads((tmp_path / rl.STEPS_LOG).read_text().splitlines()[0])
    assert line["skipped_groups"] == 2 and line["success_rate"] is None
    assert all("skipped" in g for g in line["groups"])
    from planner_runtime.training.rl_report import read_steps, write_report

    assert read_steps(tmp_path / rl.STEPS_LOG).skipped == 0  # the report reads every line the trainer writes
    assert "RL run" in write_report(tmp_path).read_text()


@pytest.mark.slow  # rollouts of the shipped release on virtual phones, two updates, a stop and a resume
def test_rl_on_virtual_phones_checkpoints_resumes_without_rerunning_rollouts_and_writes_a_release(tmp_path):
    from transformers import TrainerCallback

    from device_farm.pool.pool import DevicePool
    from device_farm.virtual.source import VirtualSource
    from planner_runtime.trajectories.query import Filter
    from planner_runtime.trajectories.store import TrajectoryStore

    class StopAfterFirstCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003, ANN201
            raise KeyboardInterrupt

    home = tmp_path / "home"
    options = rl.RlOptions(group=2, steps=2, tasks_per_step=1, episode_steps=3, save_steps=1, devices=2)
    templates = [TASKS["food.order_dish"]]  # random parameters: each step its own instance
    expected = [t.id for t in rl.schedule(templates, options)]
    assert len(set(expected)) == 2
    with DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as pool:
        with pytest.raises(KeyboardInterrupt):
            rl.train_rl(options, "rl-test", home=home, templates=templates, pool=pool, progress=False,
                        callbacks=[StopAfterFirstCheckpoint()])
        work = home / "training" / "rl-test"
        assert [json.loads(x)["step"] for x in (work / rl.STEPS_LOG).read_text().splitlines()] == [1]
        with pytest.raises(TrainingError, match="add --resume"):
            rl.train_rl(options, "rl-test", home=home, templates=templates, pool=pool, progress=False)
        result = rl.train_rl(options, "rl-test", home=home, templates=templates, pool=pool, progress=False, resume=True)
    assert result.steps == 2
    lines = [json.loads(x) for x in (work / rl.STEPS_LOG).read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert [x["groups"][0]["task"] for x in lines] == expected  # the resumed run went on with the schedule
    with TrajectoryStore(work / rl.ROLLOUTS, create=False) as store:
        for line in lines:
            episodes = [store.get(s.id) for s in store.query(Filter(collection=line["collection"]))]
            assert len(episodes) == 2  # step 1's episodes were not run again on resume
            assert all(t.planner_release == f"local:rl:rl-test@{line['step']}" or t.planner_release.startswith("rl:")
                       for t in episodes)
            assert all(step.tokens is not None for t in episodes for step in t.steps)
    for line in lines:
        assert line["scored_episodes"] == 2 and line["infra_episodes"] == 0
        assert line["sampled_tokens_per_episode"] > 0 and line["rollout_seconds"] > 0
    manifest = releases.load_manifest(home, "rl-test")
    assert manifest.parent == releases.BUILTIN_DEFAULT and manifest.data["kind"] == "rl"
    assert manifest.hyperparameters["algo"] == "care" and manifest.hyperparameters["group"] == 2
    assert rl.sft_ancestor(home, "rl-test") == releases.BUILTIN_DEFAULT
    assert releases.model_dir(home, "rl-test").is_dir()  # loads like any release
    assert not list(work.glob("checkpoint-*"))


def test_train_rl_bad_input_is_one_line_and_exit_2(tmp_path):
    from tests.planner_runtime.training.test_cli_train import _cli, _one_line

    home = tmp_path / "home"
    for args, said in ((["--group", "1"], "at least 2 episodes"),
                       (["--from", "base"], "no SFT ancestor"),
                       (["--algo", "ppo"], "choose care or grpo"),
                       (["--low", "0.9", "--high", "0.1"], "low"),
                       (["--controller", "ftp://x"], "--controller"),
                       (["--task", "no.such.task"], "no task 'no.such.task'")):
        res = _cli("train", "rl", *args, "--steps", "1", home=home, timeout=120)
        assert res.returncode == 2, (args, res.stderr)
        assert said in _one_line(res), (args, res.stderr)
    assert not (home / "training").exists() and not (home / "releases").exists()
    missing = _cli("train", "report", "nothing-here", home=home, timeout=120)
    assert missing.returncode == 2 and "nothing-here" in _one_line(missing)


def test_the_completion_logps_equal_trls_own_and_ignore_left_padding(tmp_path):
    import torch
    from trl import GRPOTrainer

    trainer, _, _ = _trainer(tmp_path, Algo.care, [])
    model = trainer.model
    ids = torch.tensor([[1, 17, 230, 45, 99, 1200, 31, 77]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        theirs, their_entropy, _ = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, ids, mask, 3,
                                                                                   compute_entropy=True)
        ours, our_entropy, _ = grpo.completion_logps(model, ids, mask, 3, None, True)
        padded, _, _ = grpo.completion_logps(model, torch.cat([torch.zeros(1, 4, dtype=torch.long), ids], 1),
                                             torch.cat([torch.zeros(1, 4, dtype=torch.long), mask], 1), 3, None, False)
    assert ours.shape == theirs.shape == (1, 3)
    assert torch.allclose(ours, theirs, atol=1e-4) and torch.allclose(our_entropy, their_entropy, atol=1e-3)
    assert torch.allclose(padded, ours, atol=1e-5)  # the same positions as the rollout's, padding or not


def test_a_shared_prompt_runs_once_for_the_same_logps_and_gradient_as_a_pass_per_episode(tmp_path):
    import torch
    from trl import GRPOTrainer

    trainer, _, _ = _trainer(tmp_path, Algo.care, [])
    model = trainer.model
    first, second = [1, 17, 230, 45, 99, 1200], [1, 88, 5, 641]
    rows = [(first, [31, 77, 2]), (second, [9, 10, 11, 12]), (first, [31, 400, 401, 402, 2])]  # rows 0 and 2 share a prompt
    width, keep = max(len(p) for p, _ in rows), max(len(c) for _, c in rows)
    ids = torch.tensor([[0] * (width - len(p)) + p + c + [0] * (keep - len(c)) for p, c in rows])  # TRL's layout
    mask = torch.tensor([[0] * (width - len(p)) + [1] * (len(p) + len(c)) + [0] * (keep - len(c)) for p, c in rows])
    seen: list[int] = []
    embed = model.get_input_embeddings().register_forward_pre_hook(lambda _, args: seen.append(args[0].numel()))
    try:
        ours, our_entropy, _ = grpo.completion_logps(model, ids, mask, keep, None, True)
    finally:
        embed.remove()
    assert sum(seen) == (len(first) - 1) + (len(second) - 1) + sum(len(c) for _, c in rows)  # each prompt once
    lora = [p for n, p in model.named_parameters() if p.requires_grad]
    valid = torch.tensor([[1.0] * len(c) + [0.0] * (keep - len(c)) for _, c in rows])
    ours_grad = torch.autograd.grad((ours * valid).sum(), lora)
    assert not (ours * (1 - valid)).any() and not (our_entropy * (1 - valid)).any()  # padding: 0, as TRL masks it

    theirs, their_entropy = [], []
    for prompt, completion in rows:  # TRL's own pass, one unpadded episode at a time
        row = torch.tensor([prompt + completion])
        lp, ent, _ = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, row, torch.ones_like(row), len(completion),
                                                                compute_entropy=True)
        theirs.append(lp[0])
        their_entropy.append(ent[0])
    their_grad = torch.autograd.grad(sum(t.sum() for t in theirs), lora)
    for k, (_, completion) in enumerate(rows):
        assert torch.allclose(ours[k, :len(completion)], theirs[k], atol=1e-4)
        assert torch.allclose(our_entropy[k, :len(completion)], their_entropy[k], atol=1e-3)
    # float32 rounding of another order of sums: ~1e-4 of the norm; leaving out the path through the
    # shared keys and values (a detached cache) would be ~0.27 of it here
    ours_flat, their_flat = (torch.cat([g.flatten() for g in grads]) for grads in (ours_grad, their_grad))
    assert float(their_flat.norm()) > 0 and float((ours_flat - their_flat).norm() / their_flat.norm()) < 1e-3
