"""`releases flatten`: a release trained from another release becomes one LoRA over the root base
model, which computes what the chain computes and loads in a home that holds nothing else."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

from planner_runtime.planners.local.model_store import ensure_embedded_model
from planner_runtime.training import data, releases, sft
from planner_runtime.training.flatten import flatten
from planner_runtime.training.releases import ReleaseError

TINY = dict(lora_rank=2, lora_alpha=4, max_length=64, lr=5e-3, save_steps=1, threads=1)


def _logits(folder, ids: list[int]) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


def _cli(home, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home.parent), "PLANNER_AGENT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "releases", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_a_chained_release_flattens_into_one_lora_over_the_base_that_computes_the_same(episodes, store, tokenizer, tmp_path):
    home = tmp_path / "home"
    sft.train_sft(store, data.Selection(), sft.SftOptions(max_steps=3, **TINY), "first", home=home, progress=False)
    sft.train_sft(store, data.Selection(), sft.SftOptions(base="release:first", max_steps=3, **TINY), "second",
                  home=home, progress=False)

    manifest = flatten(home, "second", "flat")
    first, second = releases.load_manifest(home, "first"), releases.load_manifest(home, "second")
    assert manifest.base == first.base and manifest.base.sha256 == releases.weights_sha256(ensure_embedded_model())
    assert manifest.parent == "second" and manifest.hyperparameters["flattened"] == ["second", "first"]
    assert manifest.hyperparameters["lora_rank"] == 4 and manifest.rendering == second.rendering
    assert manifest.data == second.data and manifest.bench == () and manifest.approval is None
    config = json.loads((home / "releases" / "flat" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"]) == (4, 4)

    ids = tokenizer(data.full_text(episodes[0]), add_special_tokens=False).input_ids[-64:]
    chained, flat = _logits(releases.model_dir(home, "second"), ids), _logits(releases.model_dir(home, "flat"), ids)
    parent = _logits(releases.model_dir(home, "first"), ids)
    assert (chained - parent).abs().max() > 1e-3  # the second link's update shows, so dropping it would fail below
    assert (flat - chained).abs().max() < 1e-4

    # it needs no other release: alone in a fresh home it loads against the base's own digest
    alone = tmp_path / "alone"
    shutil.copytree(home / "releases" / "flat", alone / "releases" / "flat", ignore=shutil.ignore_patterns(".merged"))
    assert (_logits(releases.model_dir(alone, "flat"), ids) - flat).abs().max() < 1e-6


def test_flatten_refuses_what_is_not_a_chain_and_writes_nothing(episodes, store, tmp_path):
    home = tmp_path / "home"
    sft.train_sft(store, data.Selection(), sft.SftOptions(max_steps=1, **TINY), "first", home=home, progress=False)
    sft.train_sft(store, data.Selection(), sft.SftOptions(base="release:first", max_steps=1, **TINY), "second",
                  home=home, progress=False)
    before = sorted(p.name for p in (home / "releases").iterdir())

    lone = _cli(home, "flatten", "first", "--out", "x")
    assert lone.returncode != 0 and "nothing to flatten" in lone.stderr and len(lone.stderr.strip().splitlines()) == 1
    taken = _cli(home, "flatten", "second", "--out", "first")
    assert taken.returncode != 0 and "already exists" in taken.stderr
    adapter = home / "releases" / "first" / "adapter_model.safetensors"
    adapter.write_bytes(adapter.read_bytes()[:-8] + b"\0" * 8)  # a damaged link of the chain
    with pytest.raises(ReleaseError, match="'first'.*do not match the manifest"):
        flatten(home, "second", "y")
    assert sorted(p.name for p in (home / "releases").iterdir()) == before
    ok = _cli(home, "flatten", "nope", "--out", "z")
    assert ok.returncode != 0 and "no release 'nope'" in ok.stderr
