"""Fixtures for runtime tests: a connected AdbDevice on a fresh virtual phone, a store file, a
phone adb lists as unauthorized, one converted copy of the embedded model for the whole run, and
the embedded local planner (for its encode path)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from device_farm.adb.device import AdbDevice
from device_farm.adb.server import AdbServer
from device_farm.virtual import VirtualPhone
from planner_runtime.contract import DeviceRef
from planner_runtime.planners.local import model_store
from planner_runtime.trajectories.store import TrajectoryStore


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


@pytest.fixture
def unauthorized_phone():
    """(serial, adb server address) of a phone that asks for ADB authentication and trusts no
    host key: its private adb server lists it as ``unauthorized``."""
    with VirtualPhone(adb_keys=[]) as phone, AdbServer() as server:
        try:
            server.client.connect(phone.address, timeout=5)
        except Exception:  # noqa: BLE001 - adbutils reports an unauthorized device as a failed connect
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and [d.state for d in server.client.list()] != ["unauthorized"]:
            time.sleep(0.05)
        assert [d.state for d in server.client.list()] == ["unauthorized"]
        yield phone.address, f"{server.host}:{server.port}"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh cache dir holding the converted embedded model, shared by every test that loads the
    model from a cache of its own (planners, serving): the ~20 s conversion runs once a run."""
    if not (os.environ.get(model_store.ENV_GGUF) or model_store.packaged_gguf()):
        pytest.skip(f"embedded model not installed: {model_store.INSTALL_HINT}")
    cache = tmp_path_factory.mktemp("planner-cache")
    model_store.ensure_embedded_model(cache, download=False)
    return cache


@pytest.fixture(scope="module")
def local_planner():
    """The local planner with the embedded model, for its own encode path (the tokenizer is what matters)."""
    if not (model_store.packaged_gguf() or os.environ.get(model_store.ENV_GGUF)):
        pytest.skip(f"embedded model not installed: {model_store.INSTALL_HINT}")
    from planner_runtime.planners.local.planner import LocalPlanner

    planner = LocalPlanner(max_new_tokens=24).load()
    yield planner
    planner.close()
