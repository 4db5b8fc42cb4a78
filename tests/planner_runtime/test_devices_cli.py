"""``planner-agent devices`` run as a user runs it, against a real adb server and virtual phones:
health, the holder of a lease taken by another process, fault counts and quarantine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from device_farm.adb.server import free_port
from device_farm.adb.source import AdbSource
from device_farm.errors import UiServerDown
from device_farm.pool.pool import DevicePool, QuarantinePolicy, Requirement


def devices_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "devices", *args],
                          capture_output=True, text=True, timeout=120)


def test_devices_json_shows_health_holder_and_quarantine(phone_factory, adb_server, tmp_path):
    held, flaky = phone_factory(), phone_factory()
    address = f"{adb_server.host}:{adb_server.port}"
    pool = DevicePool([AdbSource(address)], state_dir=tmp_path, quarantine=QuarantinePolicy(max_faults=1, backoff_s=300))
    with pytest.raises(UiServerDown):
        with pool.lease(timeout=5, require=Requirement(serial=flaky.serial)):
            raise UiServerDown("UiAutomation not connected")
    with pool.lease(timeout=5, require=Requirement(serial=held.serial), holder="collector 7"):
        res = devices_cli("--adb", address, "--state-dir", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    rows = {row["serial"]: row for row in out["devices"]}
    assert rows[held.serial]["holder"]["pid"] == os.getpid()
    assert rows[held.serial]["holder"]["name"] == "collector 7"
    assert rows[flaky.serial]["holder"] is None
    assert rows[flaky.serial]["health"]["healthy"] and rows[flaky.serial]["health"]["battery"] == 100
    assert rows[flaky.serial]["faults"] == 1 and rows[flaky.serial]["quarantined"]
    assert rows[flaky.serial]["last_fault"].startswith("ui_server_down")
    assert rows[held.serial]["faults"] == 0 and not rows[held.serial]["quarantined"]
    assert out["sources"] == [{"name": f"adb {address}", "error": None}]


def test_devices_table_with_virtual_phones_and_an_unreachable_server(tmp_path):
    dead = f"127.0.0.1:{free_port()}"
    res = devices_cli("--virtual", "2", "--adb", dead, "--state-dir", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("Pixel") == 2 and res.stdout.count("ok") >= 2
    assert f"adb {dead}" in res.stderr and "unreachable" in res.stderr


def test_devices_json_lists_virtual_phones(tmp_path):
    res = devices_cli("--virtual", "3", "--state-dir", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["devices"]
    assert len(rows) == 3 and {r["source"] for r in rows} == {"virtual"}
    assert all(r["state"] == "device" and r["health"]["boot_completed"] and r["health"]["ui_ok"] for r in rows)
