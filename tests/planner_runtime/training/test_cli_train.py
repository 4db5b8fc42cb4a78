"""``planner-agent train sft`` and ``releases``: a release trained from a store is listed, shown,
exported as a model transformers loads, and plans an episode through ``--release``; bad input
is one line with nothing stored changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner_runtime.planners.local.model_store import ensure_embedded_model
from planner_runtime.training import data, releases, sft
from planner_runtime.training.releases import BUILTIN_DEFAULT
from tests.planner_runtime.training.test_sft import TINY


def _cli(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _one_line(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip() and "Warning" not in line and "warn(" not in line]
    assert len(lines) == 1, res.stderr
    return lines[0]


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its sha256: what "nothing stored changed" compares."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow  # the model loads in four processes (train, export, show, run)
def test_train_list_show_export_and_plan_with_the_release(episodes, store, tmp_path):
    home = tmp_path / "home"
    res = _cli("train", "sft", "--store", str(store.path), "--out", "alarm", "--max-steps", "2", "--rank", "2",
               "--max-length", "64", "--lr", "5e-3", "--threads", "1", "--json", home=home)
    assert res.returncode == 0, res.stderr
    manifest = json.loads(res.stdout)
    assert manifest["name"] == "alarm" and manifest["data"]["trajectories"] == 1 and manifest["hyperparameters"]["max_steps"] == 2
    assert "training on 1 sequences from 1 trajectories" in res.stderr

    listed = _cli("releases", "list", "--json", home=home)
    assert [m["name"] for m in json.loads(listed.stdout)] == [BUILTIN_DEFAULT, "alarm"]
    shown = json.loads(_cli("releases", "show", "alarm", home=home).stdout)
    assert shown["base"]["sha256"] == releases.weights_sha256(ensure_embedded_model()) and shown["default"] is False

    out = tmp_path / "exported"
    res = _cli("releases", "export", "alarm", "--out", str(out), home=home)
    assert res.returncode == 0, res.stderr
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(out), AutoModelForCausalLM.from_pretrained(out)
    prompt = tok("<|im_start|>user\nSet an alarm<|im_end|>\n<|im_start|>assistant\n", return_tensors="pt")
    generated = model.generate(**prompt, max_new_tokens=1, do_sample=False)
    assert generated.shape[1] == prompt.input_ids.shape[1] + 1
    assert not (out / "adapter_config.json").exists() and (out / "planner-agent-release.json").is_file()
    assert (out / "planner-agent-rendering.txt").read_text().strip() == "compact"  # the planner loading it renders as trained

    res = _cli("run", "--task", "clock.set_alarm", "--virtual", "--planner", "local", "--release", "alarm", "--max-steps", "1",
               "--store", str(tmp_path / "runs.sqlite"), "--json", home=home)
    assert res.returncode in (1, 4), res.stderr  # one step of a two-step task: cut off or failed, but planned by the release
    assert json.loads(res.stdout)["planner_release"].startswith("local:alarm")


def test_an_empty_selection_is_one_line_and_writes_nothing(episodes, store, tmp_path):
    home = tmp_path / "home"
    stored = lambda: [store.get(i).model_dump() for i in store.ids()]  # noqa: E731
    before = stored()
    res = _cli("train", "sft", "--store", str(store.path), "--out", "x", "--collection", "none-such", home=home)
    assert res.returncode == 2 and "no training data: 0 trajectories selected" in _one_line(res)
    res = _cli("train", "sft", "--store", str(tmp_path / "typo.sqlite"), "--out", "x", home=home)
    assert res.returncode == 2 and "no trajectory store at" in _one_line(res)
    assert stored() == before and not (home / "releases").exists() and not (home / "training").exists()
    assert not (tmp_path / "typo.sqlite").exists()


@pytest.fixture
def release_on_a_copied_base(episodes, store, tmp_path):
    """(home, release name, base folder): a one-step LoRA trained over a copy of the embedded model."""
    base = tmp_path / "base-model"
    shutil.copytree(ensure_embedded_model(), base)
    home = tmp_path / "home"
    sft.train_sft(store, data.Selection(), sft.SftOptions(base=str(base), max_steps=1, **TINY), "r1", home=home, progress=False)
    return home, "r1", base


def test_a_damaged_release_is_refused_in_one_line_and_left_as_it_was(release_on_a_copied_base):
    home, name, base = release_on_a_copied_base
    folder = releases.release_path(home, name)
    assert _cli("releases", "show", name, home=home).returncode == 0

    # a newer manifest format
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format_version": releases.FORMAT_VERSION + 1}))
    kept = _digest(folder)
    res = _cli("run", "--task", "clock.set_alarm", "--virtual", "--planner", "local", "--release", name, "--max-steps", "1", home=home)
    assert res.returncode == 2 and "newer than this planner-agent reads" in _one_line(res)
    assert _digest(folder) == kept
    (folder / "manifest.json").write_text(json.dumps(manifest))

    # a damaged adapter
    adapter = folder / "adapter_model.safetensors"
    good = adapter.read_bytes()
    adapter.write_bytes(good[: len(good) // 2])
    kept = _digest(folder)
    res = _cli("releases", "export", name, "--out", str(home / "out"), home=home)
    assert res.returncode == 2 and "do not match the manifest" in _one_line(res)
    assert _digest(folder) == kept and not (home / "out").exists()
    adapter.write_bytes(good)

    # the base model changed on disk since training
    from safetensors.torch import load_file, save_file

    weights = base / "model.safetensors"
    tensors = load_file(weights)
    first = sorted(tensors)[0]
    tensors[first] = tensors[first] + 1
    save_file(tensors, weights, metadata={"format": "pt"})
    kept = _digest(folder)
    res = _cli("releases", "show", name, home=home)
    assert res.returncode == 2 and "was trained on a base model with sha256" in _one_line(res)
    assert _digest(folder) == kept
    assert _cli("releases", "list", "--json", home=home).returncode == 0


def test_promotion_needs_approval_and_a_bench_of_both_on_the_test_split(release_on_a_copied_base, tmp_path):
    home, name, _ = release_on_a_copied_base
    res = _cli("releases", "promote", name, "--bench", "b1", home=home)
    assert res.returncode == 2 and "add --approve --by" in _one_line(res)
    res = _cli("releases", "promote", name, "--bench", "b1", "--approve", "--by", "ana", "--store", str(tmp_path / "none.sqlite"), home=home)
    assert res.returncode == 2 and "no trajectory store at" in _one_line(res)
    assert json.loads((releases.release_path(home, name) / "manifest.json").read_text())["approval"] is None
    assert releases.default_release(home) == BUILTIN_DEFAULT


def _bench(store, pool, bench: str, release: str, succeeds: dict[str, bool]) -> None:  # noqa: ANN001
    """A bench of ``--planner local --release <release>`` and the default on a test-split task, as
    ``planner-agent bench`` records it (a collection spec per planner, then its episodes); the
    episodes are planned by scripts, good or bad per planner, so the figures are known."""
    from planner_runtime.bench.runner import Contender, collection_of, run_contender
    from planner_runtime.planners.scripted import ScriptedPlanner
    from planner_runtime.runs.collection_spec import CollectionSpec
    from planner_runtime.tasks.spec import builtin_suite
    from planner_runtime.training.promotion import model_of

    task = next(t for t in builtin_suite().tasks if t.id == "settings.dnd_on")
    assert task.split_name == "test"
    good = [{"name": "toggle_setting", "arguments": {"setting": "do_not_disturb", "on": True}}, {"name": "finish", "arguments": {"answer": "on"}}]
    bad = [{"name": "finish", "arguments": {"answer": "on"}}]
    for i, who in enumerate((release, BUILTIN_DEFAULT)):
        spec = CollectionSpec.from_options(suite=None, tasks=[task.id], script=None, split="test", planner="local",
                                           model=model_of(who))
        store.record_collection(collection_of(bench, i), spec.model_dump(mode="json"))
        script = good if succeeds[who] else bad
        contender = Contender(label=who, planner="local", collection=collection_of(bench, i), planner_for=lambda t, s=script: ScriptedPlanner(s))
        run_contender([task], contender, pool=pool, store=store, workers=1, repeat=1)


@pytest.fixture
def pool(tmp_path):
    from device_farm.pool.pool import DevicePool
    from device_farm.virtual.source import VirtualSource

    with DevicePool([VirtualSource(1)], state_dir=tmp_path / "pool") as p:
        yield p


def test_a_release_is_promoted_only_with_approval_and_a_test_bench_at_least_as_good_as_the_default(
        release_on_a_copied_base, store, pool):
    home, name, _ = release_on_a_copied_base
    folder = releases.release_path(home, name)
    _bench(store, pool, "worse", name, {name: False, BUILTIN_DEFAULT: True})
    kept = _digest(folder)
    res = _cli("releases", "promote", name, "--bench", "worse", "--approve", "--by", "ana", "--store", str(store.path), home=home)
    assert res.returncode == 2 and "succeeded on 0% of bench worse's test tasks, the current default (embedded-sft) on 100%" in _one_line(res)
    assert _digest(folder) == kept and releases.default_release(home) == BUILTIN_DEFAULT

    _bench(store, pool, "tie", name, {name: True, BUILTIN_DEFAULT: True})
    res = _cli("releases", "promote", name, "--bench", "tie", "--store", str(store.path), home=home)
    assert res.returncode == 2 and "add --approve --by" in _one_line(res)
    res = _cli("releases", "promote", name, "--bench", "tie", "--approve", "--by", "ana", "--store", str(store.path), home=home)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["approval"]["by"] == "ana"
    (entry,) = manifest["bench"]
    assert (entry["bench"], entry["split"], entry["rate"], entry["default"], entry["default_rate"]) == ("tie", "test", 1.0, BUILTIN_DEFAULT, 1.0)
    assert releases.default_release(home) == name
    listed = json.loads(_cli("releases", "list", "--json", home=home).stdout)
    assert [(m["name"], m["default"]) for m in listed] == [(BUILTIN_DEFAULT, False), (name, True)]
    # promoted once: again would compare the release with itself
    res = _cli("releases", "promote", name, "--bench", "tie", "--approve", "--by", "bo", "--store", str(store.path), home=home)
    assert res.returncode == 2 and "release 'r1' is already the default" in _one_line(res)
    assert json.loads((folder / "manifest.json").read_text()) == manifest


def test_release_options_name_a_missing_release_or_a_mismatch_in_one_line(tmp_path):
    home = tmp_path / "home"
    res = _cli("run", "--task", "clock.set_alarm", "--virtual", "--planner", "local", "--release", "nope", home=home)
    assert res.returncode == 2 and "no release 'nope'" in _one_line(res)
    res = _cli("run", "Set an alarm", "--virtual", "--planner", "local", "--release", "nope", "--model", "embedded", home=home)
    assert res.returncode == 2 and "--model and --release exclude each other" in _one_line(res)
    res = _cli("bench", "--planner", "local", "--planner", "local", "--release", "a", "--split", "test", home=home)
    assert res.returncode == 2 and "2 --planner local and 1 --release" in _one_line(res)
    res = _cli("collect", "--planner", "local", "--release", "nope", "--task", "clock.set_alarm", "--store", str(tmp_path / "s.sqlite"), home=home)
    assert res.returncode == 2 and "no release 'nope'" in _one_line(res)
    assert not (home / "releases").exists() and not (tmp_path / "s.sqlite").exists()
