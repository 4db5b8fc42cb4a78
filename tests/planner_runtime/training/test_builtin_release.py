"""The shipped default planner: a LoRA release inside the package that ``run``, ``collect``,
``bench`` and ``serve`` use while no release is promoted; ``--release base`` is the untrained
model, and the shipped files are checked like any release's before they load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner_runtime.cli.release_option import model_option
from planner_runtime.training import releases, sft
from planner_runtime.training.releases import BUILTIN_DEFAULT, BUILTIN_DIR, ReleaseError


def _cli(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_the_shipped_release_is_small_checked_and_the_default_until_one_is_promoted(tmp_path, monkeypatch):
    folder = BUILTIN_DIR / BUILTIN_DEFAULT
    manifest = releases.load_manifest(tmp_path, BUILTIN_DEFAULT)
    assert manifest.kind == "lora" and manifest.base.spec == "embedded" and releases.rendering(manifest) == "compact"
    assert sum(p.stat().st_size for p in folder.iterdir()) < 8 * 2**20  # a few MB in the repository
    assert releases.default_release(tmp_path) == BUILTIN_DEFAULT
    monkeypatch.setenv("PLANNER_AGENT_HOME", str(tmp_path))
    assert model_option(None, None, "local") == f"release:{BUILTIN_DEFAULT}"
    assert model_option(None, None, "scripted") is None and model_option(None, "base", "local") == "release:base"
    assert model_option("some/dir", None, "local") == "some/dir"
    releases.set_default(tmp_path, "mine")
    assert releases.default_release(tmp_path) == "mine" and model_option(None, None, "local") == "release:mine"
    assert BUILTIN_DEFAULT in [m.name for m in releases.list_releases(tmp_path)]
    with pytest.raises(ReleaseError, match="is a built-in release's"):
        sft.train_sft(None, None, sft.SftOptions(), BUILTIN_DEFAULT, home=tmp_path)  # refused before any data is read


def test_a_damaged_shipped_adapter_is_refused_in_one_line(tmp_path, monkeypatch):
    copy = tmp_path / "builtin"
    shutil.copytree(BUILTIN_DIR, copy)
    monkeypatch.setattr(releases, "BUILTIN_DIR", copy)
    adapter = copy / BUILTIN_DEFAULT / "adapter_model.safetensors"
    adapter.write_bytes(adapter.read_bytes()[:-16] + b"\0" * 16)
    with pytest.raises(ReleaseError, match="do not match the manifest"):
        releases.model_dir(tmp_path / "home", BUILTIN_DEFAULT, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow  # loads the shipped release (merged once into the cache) and the base
def test_run_uses_the_shipped_release_by_default_and_base_on_request(tmp_path):
    home = tmp_path / "home"
    trained = _cli("run", "--task", "clock.set_alarm", "--virtual", "--store", str(tmp_path / "t.sqlite"), home=home)
    assert trained.returncode == 0, trained.stderr
    base = _cli("run", "--task", "clock.set_alarm", "--virtual", "--release", "base", "--store", str(tmp_path / "t.sqlite"), home=home)
    assert base.returncode in (0, 1), base.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        rows = db.execute("SELECT planner_release, data_source, success FROM trajectories ORDER BY started_at").fetchall()
    assert rows[0][0].startswith(f"local:{BUILTIN_DEFAULT}@") and rows[0][1:] == ("self", 1)
    assert rows[1][0].startswith("local:SmolLM2") and rows[1][1] == "self"
    assert json.loads(_cli("releases", "list", "--json", home=home).stdout)[0]["default"] is True
