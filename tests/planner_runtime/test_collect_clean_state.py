"""Every collected episode starts from a known state: one task's leftovers on a reused virtual
phone never decide the next task's verdict, and reruns of one instance judge the same calls alike."""

from __future__ import annotations

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import builtin_suite

# the reference solutions of the personal suite (tests/planner_runtime/test_tasks_personal.py)
REFERENCE = {
    "settings.wifi_off": [{"name": "toggle_setting", "arguments": {"setting": "wifi", "on": False}},
                          {"name": "finish", "arguments": {"answer": "Wi-Fi is off"}}],
    "settings.bluetooth_on_gui": [{"name": "toggle_setting", "arguments": {"setting": "bluetooth", "on": True}},
                                  {"name": "finish", "arguments": {"answer": "Done"}}],
}
SUITE = {t.id: t for t in builtin_suite().tasks}


def reference(task):
    return ScriptedPlanner(REFERENCE[task.id])


@pytest.fixture
def one_phone(tmp_path):
    with DevicePool([VirtualSource(1)], state_dir=tmp_path / "pool") as pool:
        yield pool


def _verdicts(store, collection):
    trajs = [store.get(i) for i in store.ids()]
    return {t.item: t.verdict for t in trajs if t.collection == collection}


def test_a_task_that_leaves_wifi_off_does_not_fail_the_next_one_on_the_same_phone(one_phone, store):
    # collect --task settings.wifi_off --task settings.bluetooth_on_gui -n 1
    tasks = [SUITE["settings.wifi_off"], SUITE["settings.bluetooth_on_gui"]]
    coll, progress = collect(tasks, pool=one_phone, store=store, planner_for=reference, workers=1)
    verdicts = _verdicts(store, coll)
    failed = {item: [c.name for c in v.checks if not c.passed] for item, v in verdicts.items() if not v.success}
    assert failed == {} and (progress.success, progress.failed) == (2, 0)


# bluetooth_on_gui as it was before its setup set Wi-Fi: only a clean phone makes it repeatable
UNSEEDED_WIFI = """
tasks:
  - id: settings.bluetooth_on_gui
    goal: Turn Bluetooth on
    domain: settings
    setup:
      - settings_put: {namespace: global, key: bluetooth_on, value: "0"}
    checks:
      - name: Bluetooth is on
        setting: {namespace: global, key: bluetooth_on, equals: "1"}
      - name: Wi-Fi is untouched
        setting: {namespace: global, key: wifi_on, equals: "1"}
"""


def test_reruns_of_one_instance_give_the_same_verdict_for_the_same_calls(one_phone, store, tmp_path):
    from planner_runtime.tasks.spec import load_suite

    (tmp_path / "suite.yaml").write_text(UNSEEDED_WIFI)
    bluetooth = load_suite(tmp_path / "suite.yaml").tasks[0]
    # on the one phone, every run of bluetooth_on_gui but the first follows a run of wifi_off
    tasks = [bluetooth, SUITE["settings.wifi_off"]]
    coll, _ = collect(tasks, pool=one_phone, store=store, planner_for=reference, workers=1, repeat=3)
    verdicts = _verdicts(store, coll)
    for task in tasks:
        seen = {(v.success, v.score, tuple((c.name, c.passed, c.evidence) for c in v.checks))
                for item, v in verdicts.items() if item.startswith(f"{task.id}#")}
        assert len(seen) == 1, (task.id, seen)


def test_a_lease_on_a_virtual_phone_restores_it_and_one_on_an_adb_phone_says_it_cannot(one_phone, tmp_path, virtual_phone):
    from device_farm.adb.source import AdbSource

    with one_phone.lease(timeout=10) as device:
        device.shell(["settings", "put", "global", "wifi_on", "0"])
    lease = one_phone.lease(timeout=10)
    with lease as device:
        assert lease.restore_clean() is True
        assert device.shell(["settings", "get", "global", "wifi_on"]).output.strip() == "1"
    with DevicePool([AdbSource(f"{virtual_phone.adb.host}:{virtual_phone.adb.port}")], state_dir=tmp_path / "adb") as real:
        lease = real.lease(timeout=10)
        with lease as device:
            device.shell(["settings", "put", "global", "wifi_on", "0"])
            assert lease.restore_clean() is False  # a real phone keeps what its last user left
            assert device.shell(["settings", "get", "global", "wifi_on"]).output.strip() == "0"
