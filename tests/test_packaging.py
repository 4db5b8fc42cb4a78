"""The package as a user installs it: built from this tree, installed (not editable) into a fresh
virtual environment, ``planner-agent skills list`` run from a folder outside the checkout finds
the built-in skills, read from the installed package rather than from the checkout.

Offline and quick: the build uses the setuptools already installed (``--no-build-isolation
--no-index``) and the fresh environment sees this interpreter's packages (torch, typer, ...)
through a ``.pth`` file instead of installing them again.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from planner_runtime.harness.skills import load_skills

ROOT = Path(__file__).resolve().parents[1]
# What a build reads; copied so the build writes its build/ and egg-info into tmp_path, not the checkout.
SOURCES = ("pyproject.toml", "README.md", "planner_runtime", "device_farm", "skills")


def _run(*command: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, f"{' '.join(map(str, command))}\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    return res


def _source_copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for name in SOURCES:
        if not (ROOT / name).exists():
            continue
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    return src


def _fresh_venv(tmp_path: Path) -> Path:
    """A venv without the project whose imports fall back to this interpreter's site-packages
    (plain path lines: their own .pth files, such as an editable install of the project, are not run)."""
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    purelib = _run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    Path(purelib, "outer-site-packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


def _outside_env() -> dict[str, str]:
    """The environment without this checkout on PYTHONPATH: there, a checkout's
    ``planner_agent.egg-info`` would tell pip the package is installed already."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLANNER_AGENT_SKILLS_DIR")}


def _pip_install(venv: Path, target: Path) -> None:
    _run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--quiet",
         "--no-deps", "--no-index", "--no-build-isolation", target, env=_outside_env())


def _skills_listed_from_elsewhere(venv: Path, tmp_path: Path) -> list[dict]:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = _run(venv / "bin" / "planner-agent", "skills", "list", "--json", cwd=elsewhere, env=_outside_env())
    return json.loads(res.stdout)


@pytest.mark.parametrize("how", ["wheel", "pip install ."])
def test_an_installed_package_ships_the_skills_and_lists_them_from_any_folder(tmp_path, how):
    src = _source_copy(tmp_path)
    venv = _fresh_venv(tmp_path)
    if how == "wheel":
        _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
             "-w", tmp_path / "dist", src)
        (wheel,) = (tmp_path / "dist").glob("planner_agent-*.whl")
        _pip_install(venv, wheel)
    else:
        _pip_install(venv, src)
    shutil.rmtree(src)  # nothing may be read from the tree it was built from

    listed = _skills_listed_from_elsewhere(venv, tmp_path)

    want = sorted(s.name for s in load_skills(ROOT / "skills"))
    assert len(want) >= 10
    assert sorted(s["name"] for s in listed) == want
    assert all(Path(s["path"]).is_relative_to(venv) for s in listed), [s["path"] for s in listed][:3]
    # the shipped default planner travels with the package, every file its release check reads
    res = _run(venv / "bin" / "planner-agent", "releases", "list", "--json", cwd=tmp_path / "elsewhere",
               env={**_outside_env(), "PLANNER_AGENT_HOME": str(tmp_path / "home")})
    (shipped,) = json.loads(res.stdout)
    assert shipped["name"] == "embedded-sft" and shipped["default"] is True and shipped["rendering"].startswith("chatml-compact:")
    folder = next(Path(venv).rglob("training/builtin/embedded-sft"))
    assert {p.name for p in folder.iterdir()} >= {"manifest.json", "adapter_config.json", "adapter_model.safetensors",
                                                  "planner-agent-rendering.txt"}


def test_the_runtime_image_copies_what_the_build_reads():
    # docker/runtime.Dockerfile installs the package from its COPY lines: the same files the
    # build above needs, each of which must exist (no Docker engine is needed to check that).
    copied = []
    for line in (ROOT / "docker" / "runtime.Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *sources, _dest = line.split()[1:]
            copied += sources
    assert sorted(copied) == sorted(SOURCES)
    assert all((ROOT / source).exists() for source in copied)
