"""Health records: parsing Android's own outputs, and a probe of a real virtual phone."""

from __future__ import annotations

from device_farm.adb.source import AdbSource
from device_farm.health import DeviceHealth, HealthPolicy, parse_battery, parse_df_free_mb
from device_farm.sources import DeviceCandidate

TOYBOX_DF = """Filesystem       1K-blocks    Used Available Use% Mounted on
/dev/block/dm-48 115249860 8420180 106698896   8% /data
"""
WRAPPED_DF = """Filesystem     1K-blocks    Used Available Use% Mounted on
/dev/block/bootdevice/by-name/userdata
                 24590672 2047296  22412304   9% /data
"""
TOOLBOX_DF = """Filesystem             Size   Used   Free   Blksize
/data                 12.5G   5.1G   7.4G   4096
"""


def test_df_free_space_in_every_layout():
    assert parse_df_free_mb(TOYBOX_DF) == 106698896 // 1024
    assert parse_df_free_mb(WRAPPED_DF) == 22412304 // 1024
    assert parse_df_free_mb(TOOLBOX_DF) == int(7.4 * 1024)
    assert parse_df_free_mb("/system/bin/sh: df: inaccessible or not found\n") is None


def test_battery_level_is_scaled():
    assert parse_battery("  AC powered: false\n  level: 42\n  scale: 100\n") == 42
    assert parse_battery("  level: 50\n  scale: 200\n") == 25
    assert parse_battery("Can't find service: battery\n") is None


def _candidate(phone) -> DeviceCandidate:
    return DeviceCandidate(key=f"test/{phone.serial}", serial=phone.serial, source="test")


def test_probe_of_a_live_phone(virtual_phone):
    source = AdbSource(f"{virtual_phone.adb.host}:{virtual_phone.adb.port}")
    health = source.probe(_candidate(virtual_phone))
    assert health.healthy and health.state == "device"
    assert (health.boot_completed, health.ui_ok, health.battery) == (True, True, 100)
    assert DeviceHealth(**{k: v for k, v in health.to_json().items() if k != "healthy"} | {"problems": ()}) == health


def test_low_battery_is_a_problem_under_the_policy(virtual_phone):
    virtual_phone.adb_cli("shell", "dumpsys battery set level 3")
    source = AdbSource(f"{virtual_phone.adb.host}:{virtual_phone.adb.port}", policy=HealthPolicy(min_battery=5))
    health = source.probe(_candidate(virtual_phone))
    assert not health.healthy and health.battery == 3
    assert health.problems == ("battery 3% < 5%",)


def test_probe_of_a_stopped_phone_says_offline_without_raising(virtual_phone):
    virtual_phone.phone.stop()
    source = AdbSource(f"{virtual_phone.adb.host}:{virtual_phone.adb.port}")
    health = source.probe(_candidate(virtual_phone))
    assert not health.healthy and health.state in ("offline", "missing")
    assert health.boot_completed is None and health.battery is None
