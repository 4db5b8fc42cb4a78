"""Fixtures for runtime tests: a connected AdbDevice on a fresh virtual phone, a store file."""

from __future__ import annotations

import pytest

from device_farm.adb import AdbDevice
from planner_runtime.contract import DeviceRef
from planner_runtime.trajectories import TrajectoryStore


@pytest.fixture
def device(virtual_phone):
    dev = AdbDevice(virtual_phone.serial, adb_host=virtual_phone.adb.host, adb_port=virtual_phone.adb.port)
    dev.connect()
    yield dev
    dev.close()


@pytest.fixture
def device_ref(virtual_phone) -> DeviceRef:
    return DeviceRef(serial=virtual_phone.serial, model="virtual")


@pytest.fixture
def store(tmp_path):
    with TrajectoryStore(tmp_path / "trajectories.sqlite") as s:
        yield s
