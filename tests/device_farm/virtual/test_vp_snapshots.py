"""Snapshots and `pm clear` on the virtual phone: state is changed and read back only
through adb (content, settings, files, the foreground activity); the Python API saves
and restores."""

from __future__ import annotations

import time

import pytest
import uiautomator2 as u2

from device_farm.virtual import SnapshotError
from device_farm.virtual.apps import default_apps
from device_farm.virtual.snapshot import capture, restore
from device_farm.virtual.os.system import AndroidSystem

CLOCK = "com.google.android.deskclock"
ALARMS = "content://com.android.deskclock/alarms"
SET_ALARM = ("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR {h} "
             "--ei android.intent.extra.alarm.MINUTES {m} --ez android.intent.extra.alarm.SKIP_UI true")


def test_restore_brings_back_providers_settings_files_and_screen(virtual_phone):
    d, phone = virtual_phone.device, virtual_phone.phone
    d.shell(SET_ALARM.format(h=7, m=30))
    d.shell("settings put system screen_brightness 40")
    d.sync.push(b"saved", "/sdcard/Download/note.txt")
    d.shell("am start -a android.intent.action.SHOW_ALARMS")
    phone.save_snapshot("morning")

    d.shell(SET_ALARM.format(h=9, m=0))
    d.shell(f"content delete --uri {ALARMS} --where hour=7")
    d.shell("settings put system screen_brightness 200")
    d.sync.push(b"changed", "/sdcard/Download/note.txt")
    d.shell("rm -f /sdcard/Download/note.txt; input keyevent HOME")
    assert d.app_current().package != CLOCK

    phone.restore_snapshot("morning")
    assert d.shell(f"content query --uri {ALARMS} --projection hour:minutes") == "Row: 0 hour=7, minutes=30"
    assert d.shell("settings get system screen_brightness") == "40"
    assert d.shell("cat /sdcard/Download/note.txt") == "saved"
    assert d.app_current().package == CLOCK


def test_a_snapshot_restores_many_times_and_after_factory_reset(virtual_phone):
    d, phone = virtual_phone.device, virtual_phone.phone
    d.shell(SET_ALARM.format(h=6, m=15))
    phone.save_snapshot("one")
    for hour in (8, 10):
        d.shell(SET_ALARM.format(h=hour, m=0))
        phone.restore_snapshot("one")
        assert d.shell(f"content query --uri {ALARMS} --projection hour") == "Row: 0 hour=6"
    phone.reset()
    assert d.shell(f"content query --uri {ALARMS}") == "No result found."
    phone.restore_snapshot("one")
    assert d.shell(f"content query --uri {ALARMS} --projection hour") == "Row: 0 hour=6"
    assert phone.list_snapshots() == ["one"]


def test_focused_field_text_comes_back(virtual_phone):
    d, phone = virtual_phone.device, virtual_phone.phone
    ui = u2.connect(d)
    d.shell("am start -a android.intent.action.SHOW_ALARMS")
    ui(description="Add alarm").click()
    d.shell("input text 7")
    phone.save_snapshot("typing")
    d.shell("input text 3")
    d.shell("input keyevent BACK")
    phone.restore_snapshot("typing")
    assert ui(resourceId="android:id/input_hour").get_text() == "7"
    d.shell("input text 5")  # the hour field still has focus
    assert ui(resourceId="android:id/input_hour").get_text() == "75"


def test_the_wall_clock_goes_back_to_the_saved_time():
    system = AndroidSystem("clock", default_apps())
    try:
        system.set_time(1_700_000_000)
        saved = capture(system, "t")
        system.set_time(1_800_000_000)
        restore(system, saved)
        assert abs(system.now() - 1_700_000_000) < 5
    finally:
        system.shutdown()


def test_unknown_snapshot_is_an_error(virtual_phone):
    with pytest.raises(SnapshotError):
        virtual_phone.phone.restore_snapshot("nope")


def test_restore_is_fast(virtual_phone):
    """Not a timing contract (see benchmarks/bench_virtual_phone.py); a generous bound that
    only a regression by orders of magnitude would break."""
    d, phone = virtual_phone.device, virtual_phone.phone
    for hour in range(12):
        d.shell(SET_ALARM.format(h=hour, m=0))
    phone.save_snapshot("s")
    start = time.perf_counter()
    phone.restore_snapshot("s")
    assert time.perf_counter() - start < 1.0


def test_pm_clear_wipes_the_apps_data_and_only_its(virtual_phone):
    d = virtual_phone.device
    d.shell(SET_ALARM.format(h=7, m=0))
    d.shell("content insert --uri content://com.android.contacts/raw_contacts --bind display_name:s:Ada")
    d.sync.push(b"prefs", f"/data/data/{CLOCK}/shared_prefs.xml")
    d.shell(f"mkdir -p /sdcard/Android/data/{CLOCK}/files && touch /sdcard/Android/data/{CLOCK}/files/x")
    d.shell("am start -a android.intent.action.SHOW_ALARMS")
    out = d.shell2(f"pm clear {CLOCK}")
    assert (out.returncode, out.output) == (0, "Success\n")
    assert d.shell(f"content query --uri {ALARMS}") == "No result found."
    assert d.shell(f"ls /data/data/{CLOCK}") == ""
    assert d.shell2(f"ls /sdcard/Android/data/{CLOCK}/files").returncode != 0
    assert d.app_current().package != CLOCK  # the app was stopped
    assert "Ada" in d.shell("content query --uri content://com.android.contacts/raw_contacts")
    assert d.shell2("pm clear no.such.app").output == "Failed\n"
