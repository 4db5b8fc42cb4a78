"""``planner-agent tasks check`` warns about checks that read device state the task's setup never
sets (a real phone keeps what earlier runs left), and the built-in suites have none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner_runtime.tasks.spec import SUITES_DIR


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli", *args], capture_output=True, text=True, timeout=120)


def suite(tmp_path, setup: str, extra: str = "") -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "tasks:\n  - id: settings.bluetooth_on_gui\n    goal: Turn Bluetooth on\n    domain: settings\n"
        f"    setup:\n      - settings_put: {{namespace: global, key: bluetooth_on, value: '0'}}\n{setup}{extra}"
        "    checks:\n      - name: Bluetooth is on\n        setting: {namespace: global, key: bluetooth_on, equals: '1'}\n"
        "      - name: Wi-Fi is untouched\n        setting: {namespace: global, key: wifi_on, equals: '1'}\n"
        "      - content: {uri: 'content://com.android.contacts/contacts', min: 1}\n"
        "      - answer_contains: done\n"
    )
    return str(path)


def test_a_check_on_a_setting_and_a_provider_the_setup_never_resets_is_a_warning(tmp_path):
    path = suite(tmp_path, "      - content_insert: {uri: 'content://com.android.contacts/raw_contacts', values: {display_name: Ada}}\n")
    res = cli("tasks", "check", path, "--json")
    assert res.returncode == 0, res.stderr  # a warning: the suite still loads and runs
    warnings = json.loads(res.stdout)["warnings"]
    assert warnings == [
        {"task": "settings.bluetooth_on_gui", "check": "Wi-Fi is untouched", "key": "setting:global/wifi_on"},
        {"task": "settings.bluetooth_on_gui", "check": "#3", "key": "content:com.android.contacts"},  # an insert keeps old rows
    ]
    said = " ".join(res.stderr.split())
    assert "warning:" in said and "reads setting:global/wifi_on, which its setup never sets" in said
    assert "assumes: [setting:global/wifi_on]" in said


def test_setting_the_state_in_setup_or_assuming_it_silences_the_warning(tmp_path):
    path = suite(tmp_path, "      - settings_put: {namespace: global, key: wifi_on, value: '1'}\n"
                           "      - content_delete: {uri: 'content://com.android.contacts/raw_contacts'}\n")
    res = cli("tasks", "check", path, "--json")
    assert res.returncode == 0 and "warnings" not in json.loads(res.stdout), res.stderr
    path = suite(tmp_path, "", "    assumes: [setting:global/wifi_on, content:com.android.contacts]\n")
    res = cli("tasks", "check", path)
    assert res.returncode == 0 and "warning" not in res.stderr and "tasks OK" in res.stdout, res.stderr


def test_an_assumed_key_that_is_no_state_key_is_refused_with_its_line(tmp_path):
    path = suite(tmp_path, "", "    assumes: [wifi_on]\n")
    res = cli("tasks", "check", path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    said = " ".join(res.stderr.split())
    assert "suite.yaml:7: tasks.0.assumes.0: 'wifi_on' is no state key: write setting:NAMESPACE/KEY" in said, said


@pytest.mark.parametrize("name", sorted(p.name for p in SUITES_DIR.glob("*.yaml")))
def test_the_built_in_suites_set_every_state_their_checks_read(name):
    res = cli("tasks", "check", str(SUITES_DIR / name), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout).get("warnings", []) == []
