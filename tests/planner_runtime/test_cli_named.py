"""What the user names must be there: an adb server given with --adb or PLANNER_AGENT_ADB, a
--serial, a planner URL's port, a scripted planner's script, a PLANNER_AGENT_* variable. Each
mistake is one ``error:`` line and exit 2 before anything runs (only the default adb server may
be absent, and then the built-in virtual phone stands in)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from device_farm.adb.server import free_port
from planner_runtime.config import known_variables, parse_host_port, unknown_variables
from planner_runtime.errors import ConfigError

FINISH = [{"name": "finish", "arguments": {"answer": "done"}}]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def _error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout + res.stderr)
    assert "Traceback" not in res.stderr and "started the built-in virtual phone" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


@pytest.fixture
def fin(tmp_path: Path) -> str:
    path = tmp_path / "fin.json"
    path.write_text(json.dumps(FINISH))
    return str(path)


def test_a_named_adb_server_that_is_not_there_is_a_usage_error(tmp_path, fin):
    run = ("run", "Look around", "--planner", "scripted", "--script", fin, "--store", str(tmp_path / "t.sqlite"))
    assert "expected host:port" in _error(cli(*run, "--adb", "notaport"))
    dead = f"127.0.0.1:{free_port()}"
    assert f"no adb server {dead} is listening" in _error(cli(*run, "--adb", dead))
    assert f"no adb server {dead} is listening" in _error(cli(*run, env={"PLANNER_AGENT_ADB": dead}))
    assert "expected host:port" in _error(cli(*run, env={"PLANNER_AGENT_ADB": "notaport"}))
    assert not (tmp_path / "t.sqlite").exists()
    with pytest.raises(ConfigError):
        parse_host_port("notaport")
    assert parse_host_port("10.0.0.5:5037") == ("10.0.0.5", 5037)


def test_a_serial_the_adb_server_does_not_list_is_a_usage_error_naming_those_it_does(tmp_path, fin, virtual_phone):
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    line = _error(cli("run", "Look around", "--serial", "NOPE", "--adb", adb, "--planner", "scripted", "--script", fin,
                      "--store", str(tmp_path / "t.sqlite")))
    assert "no phone 'NOPE'" in line and f"{virtual_phone.serial} (device)" in line


def test_an_empty_named_adb_server_is_a_usage_error(tmp_path, fin):
    from device_farm.adb.server import AdbServer

    with AdbServer() as server:
        line = _error(cli("run", "Look around", "--adb", f"{server.host}:{server.port}", "--planner", "scripted", "--script", fin,
                          "--store", str(tmp_path / "t.sqlite")))
    assert "lists no phone" in line and "--virtual" in line


def test_planner_mistakes_are_refused_up_front(tmp_path):
    run = ("run", "Look around", "--virtual", "--store", str(tmp_path / "t.sqlite"))
    assert "port from 1 to 65535" in _error(cli(*run, "--planner", "openai://127.0.0.1:99999/planner"))
    assert "port from 1 to 65535" in _error(cli(*run, "--planner", "openai://127.0.0.1:http/planner"))
    assert "--planner scripted needs --script" in _error(cli(*run, "--planner", "scripted"))
    assert not (tmp_path / "t.sqlite").exists()


def test_a_misspelled_variable_is_named_with_the_closest_setting(tmp_path):
    res = cli("memory", "list", env={"PLANNER_AGENT_MAXSTEPS": "3", "PLANNER_AGENT_HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "PLANNER_AGENT_MAXSTEPS" in warnings[0] and "did you mean PLANNER_AGENT_MAX_STEPS?" in warnings[0]
    known = {name: "x" for name in known_variables()}
    assert unknown_variables(known) == []


def test_every_variable_the_code_reads_counts_as_known():
    root = Path(__file__).resolve().parents[2]
    named = {m for p in (root / "planner_runtime").rglob("*.py") for m in re.findall(r"PLANNER_AGENT_[A-Z0-9_]*[A-Z0-9]", p.read_text())}
    named |= {m for p in (root / "device_farm").rglob("*.py") for m in re.findall(r"PLANNER_AGENT_[A-Z0-9_]*[A-Z0-9]", p.read_text())}
    assert named and named <= set(known_variables()), named - set(known_variables())
