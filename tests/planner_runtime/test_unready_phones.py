"""A phone adb lists but cannot drive (here: one that trusts no host key, so adb keeps it
``unauthorized``), as ``collect`` and ``devices`` report it: one line naming its state and what to
do, never a silent wait for a lease nor a state it is not in."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from device_farm.adb.source import AdbSource


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)



def test_collect_on_an_unauthorized_phone_is_one_error_line_at_once(tmp_path, unauthorized_phone):
    serial, adb = unauthorized_phone
    store = tmp_path / "c.sqlite"
    started = time.monotonic()
    script = tmp_path / "calls.json"
    script.write_text('{"clock.set_alarm": [{"name": "finish", "arguments": {"answer": "done"}}]}')
    res = cli("collect", "--task", "clock.set_alarm", "--planner", "scripted", "--script", str(script), "--adb", adb, "--allow-reset",
              "--store", str(store), "--state-dir", str(tmp_path / "pool"), timeout=60)
    assert res.returncode == 2, res.stderr + res.stdout
    assert time.monotonic() - started < 30  # not the lease timeouts (120 s, three attempts)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: phone {serial} is unauthorized: accept the USB debugging dialog on it"], res.stderr
    assert "Traceback" not in res.stderr and "deletes app data" not in res.stderr
    assert not store.exists()  # a refused collection leaves nothing behind


def test_devices_names_the_state_an_unauthorized_phone_is_in(tmp_path, unauthorized_phone):
    serial, adb = unauthorized_phone
    res = cli("devices", "--adb", adb, "--state-dir", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["devices"]
    assert (row["serial"], row["state"]) == (serial, "unauthorized")
    assert row["health"]["state"] == "unauthorized"
    assert row["health"]["problems"] == ["adb state is unauthorized"]
    assert AdbSource(adb).state("emulator-0000") == "missing"  # a serial the server does not list
