"""``train rl --ray``: a step's rollouts on two device hosts of the local Ray, each host building the
policy being trained from the weights the trainer published, the episodes back in the run's store
with their token records (scored sequences); and ``--ray`` refused in one line before anything runs."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest

from device_farm.adb.server import free_port
from planner_runtime.cli.devices import pool_from_options
from planner_runtime.runs.distributed import Farm
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.training import releases, rl

TASKS = {t.id: t for t in builtin_suite().tasks}


def test_rl_step_rolls_out_on_two_hosts_and_trains_on_scored_sequences(ray_cluster, tmp_path):
    from planner_runtime.trajectories.query import Filter
    from planner_runtime.trajectories.store import TrajectoryStore

    home = tmp_path / "home"
    options = rl.RlOptions(group=2, steps=1, tasks_per_step=1, episode_steps=2, max_new_tokens=48, save_steps=1,
                           devices=1, threads=1)
    farm = Farm(pool=functools.partial(pool_from_options, [], 1, tmp_path / "pool"), workers=1, hosts=2)
    result = rl.train_rl(options, "rl-ray", home=home, templates=[TASKS["clock.set_alarm"]], pool=None, farm=farm,
                         progress=False)
    assert result.steps == 1
    [line] = [json.loads(x) for x in (result.run_dir / rl.STEPS_LOG).read_text().splitlines()]
    assert line["scored_episodes"] == 2 and line["infra_episodes"] == 0
    assert line["sampled_tokens_per_episode"] > 0  # the hosts' token records came back: the sequences are scored
    with TrajectoryStore(result.run_dir / rl.ROLLOUTS, create=False) as store:
        episodes = [store.get(s.id) for s in store.query(Filter(collection=line["collection"]))]
    assert sorted(t.item for t in episodes) == [f"{line['groups'][0]['task']}#{r}" for r in range(2)]  # each once
    assert all(t.planner_release.endswith("rl:rl-ray@1") for t in episodes)
    assert all(step.tokens is not None and step.tokens.completion_ids for t in episodes for step in t.steps)
    assert releases.load_manifest(home, "rl-ray").data["kind"] == "rl"


@pytest.mark.parametrize("lora", [True, False])
def test_a_host_builds_the_policy_the_trainer_holds_from_the_published_weights(lora):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from planner_runtime.planners.local.model_store import ensure_embedded_model
    from planner_runtime.training.hosted_policy import PolicyOnHosts, trainable_state

    path = ensure_embedded_model()
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM") if lora else None
    trained = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if lora:
        trained = get_peft_model(trained, config)
    with torch.no_grad():  # a step's update: the adapter (zero at first) or a weight of the model moves
        for name, weight in trained.named_parameters():
            if ("lora_B" in name) if lora else name.endswith("layers.0.mlp.down_proj.weight"):
                weight.add_(torch.randn_like(weight) * 0.05)
    state = trainable_state(trained, lora)
    assert all("lora_" in k for k in state) if lora else len(state) > 100
    policy = PolicyOnHosts(weights=None, model_path=str(path), dtype="float32", lora=config, rendering="", release="rl:t@1",
                           first_seeds=(), temperature=1.0, max_new_tokens=8)
    built, _, _ = policy._model(state)
    ids = torch.tensor([[1, 17, 230, 45, 99]])
    with torch.no_grad():
        theirs, ours = trained(input_ids=ids).logits, built(input_ids=ids).logits
        plain = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)(input_ids=ids).logits
    assert torch.allclose(ours, theirs, atol=1e-5) and not torch.allclose(ours, plain, atol=1e-3)
    from planner_runtime.training import TrainingError

    short = dict(list(state.items())[1:])  # a tensor lost on the way: refused, never sampled as the base's
    with pytest.raises(TrainingError, match="1 missing"):
        policy._model(short)


def test_train_rl_with_an_address_nothing_listens_at_is_refused_in_one_line(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from tests.planner_runtime.training.test_cli_train import _cli, _one_line

    home = tmp_path / "home"
    port = free_port()
    res = _cli("train", "rl", "--ray", f"127.0.0.1:{port}", "--steps", "1", "--task", "clock.set_alarm", home=home, timeout=120)
    assert res.returncode == 2
    assert f"--ray 127.0.0.1:{port}: no Ray cluster answers there" in _one_line(res)
    alone = _cli("train", "rl", "--ray-hosts", "2", "--steps", "1", home=home, timeout=120)
    assert alone.returncode == 2 and "--ray-hosts needs --ray ADDRESS" in _one_line(alone)
    assert not (home / "training").exists() and not (home / "releases").exists()
