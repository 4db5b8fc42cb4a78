"""``planner-agent tasks check`` warns about checks that read device state the task's setup never
sets (a real phone keeps what earlier runs left), and the built-in suites have none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner_runtime.tasks.spec import SUITES_DIR


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=120)


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


def _rows_suite(tmp_path, setup: str, check_uri: str) -> str:
    path = tmp_path / "rows.yaml"
    path.write_text(
        "tasks:\n  - id: messages.sent_one\n    goal: Text Ada hi\n    domain: messages\n"
        f"    setup:\n{setup}"
        f"    checks:\n      - content: {{uri: '{check_uri}', min: 1, max: 1}}\n"
    )
    return str(path)


@pytest.mark.parametrize("setup, check_uri, warned", [
    ("      - content_delete: {uri: 'content://sms', where: \"address='+15550100'\"}\n", "content://sms/sent", True),
    ("      - content_delete: {uri: 'content://sms/inbox'}\n", "content://sms/sent", True),
    ("      - content_delete: {uri: 'content://sms'}\n", "content://sms/sent", False),
    ("      - content_delete: {uri: 'content://sms/sent'}\n", "content://sms/sent", False),
    ("      - content_delete: {uri: 'content://com.android.contacts/raw_contacts'}\n", "content://com.android.contacts/data", False),
    ("      - content_delete: {uri: 'content://com.android.contacts/data'}\n", "content://com.android.contacts/raw_contacts", True),
])
def test_only_a_delete_of_every_row_of_the_table_covers_a_check_on_it(tmp_path, setup, check_uri, warned):
    res = cli("tasks", "check", _rows_suite(tmp_path, setup, check_uri), "--json")
    assert res.returncode == 0, res.stderr
    assert bool(json.loads(res.stdout).get("warnings")) == warned, res.stdout


def test_emptying_a_folder_covers_the_file_checks_below_it(tmp_path):
    path = tmp_path / "files.yaml"
    path.write_text(
        "tasks:\n  - id: files.keep_lease\n    goal: Tidy my Downloads\n    domain: files\n"
        "    setup:\n      - folder_empty: {path: /sdcard/Download}\n"
        "    checks:\n      - file: {path: /sdcard/Download/lease.pdf}\n"
        "      - file: {path: /sdcard/Documents/lease.pdf}\n"
    )
    res = cli("tasks", "check", str(path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["warnings"] == [
        {"task": "files.keep_lease", "check": "#2", "key": "file:/sdcard/Documents/lease.pdf"}]
