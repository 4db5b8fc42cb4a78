"""``--ray`` refused before anything runs, as a user sees it (a subprocess): Ray not installed, an
address nothing listens at, ``--ray-hosts`` alone. One line each, exit 2, no store created."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from device_farm.adb.server import free_port


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def _said(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    return " ".join(res.stderr.split())


def _without_ray(tmp_path) -> dict[str, str]:
    """An environment in which ``import ray`` fails, as if the extra were not installed."""
    hidden = tmp_path / "no-ray" / "ray"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden.parent), os.environ.get("PYTHONPATH", ""), "."])}


@pytest.mark.parametrize("verb", ["collect", "bench"])
def test_without_ray_installed_one_line_says_how_to_install_it(tmp_path, verb):
    res = cli(verb, "--ray", "auto", "--planner", "demo", "--task", "clock.set_alarm", "--store", str(tmp_path / "t.sqlite"),
              env=_without_ray(tmp_path))
    assert res.returncode == 2
    assert "install the ray extra: pip install 'planner-agent[ray]'" in _said(res)
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "t.sqlite").exists()


def test_without_ray_installed_a_collection_without_ray_runs(tmp_path):
    res = cli("collect", "--planner", "demo", "--task", "clock.set_alarm", "-n", "1", "--store", str(tmp_path / "t.sqlite"),
              "--state-dir", str(tmp_path / "pool"), "--json", env=_without_ray(tmp_path))
    assert res.returncode == 0, res.stderr  # Ray is imported only when --ray is given
    assert "hosts" not in res.stdout and '"succeeded": 1' in res.stdout


def test_an_address_nothing_listens_at_is_refused_at_once(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    port = free_port()
    res = cli("collect", "--ray", f"127.0.0.1:{port}", "--planner", "demo", "--task", "clock.set_alarm",
              "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 2
    said = _said(res)
    assert f"--ray 127.0.0.1:{port}: no Ray cluster answers there" in said and "ray start --head" in said
    assert not (tmp_path / "t.sqlite").exists()
    odd = cli("collect", "--ray", "somewhere", "--planner", "demo", "--store", str(tmp_path / "t.sqlite"))
    assert odd.returncode == 2 and "expected auto, local, HOST:PORT or ray://HOST:PORT" in _said(odd)


def test_ray_hosts_without_ray_is_a_usage_error(tmp_path):
    res = cli("collect", "--ray-hosts", "2", "--planner", "demo", "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 2 and "--ray-hosts needs --ray ADDRESS" in _said(res)
