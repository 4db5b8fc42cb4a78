"""Shared fixtures: a private real adb server and virtual phones attached to it.

`adb_server` (session) is the real `adb` binary shipped with adbutils, on a free port with
its own HOME. `virtual_phone` (function) is a fresh VirtualPhone connected to that server
with `adb connect`, online (`device` state) before the test starts; its `.phone`, `.serial`
and `.adb` are what tests need. A phone starts in a few milliseconds, so each test gets a
new one rather than a reset shared one.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import adbutils
import pytest

from device_farm.adb.server import AdbServer
from device_farm.virtual import VirtualPhone

# Under pytest-xdist (`-n auto`, the README's parallel option) the workers share the cores: each
# one, and every process it starts (CLI runs, serve, Ray hosts), computes with its share of them.
# Two torch processes that each take every core slow each other down many times over. Set before
# anything imports torch; a value the user gave is kept.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS > 1:
    _SHARE = str(max(1, len(os.sched_getaffinity(0)) // _WORKERS))
    os.environ.setdefault("PLANNER_AGENT_THREADS", _SHARE)
    os.environ.setdefault("OMP_NUM_THREADS", _SHARE)

# A suite started in the background (`pytest ... &` in a script, nohup) inherits SIGINT ignored,
# and so would every CLI the Ctrl-C tests start: they would send a signal nobody hears. Python
# installs its Ctrl-C handler only where SIGINT is not ignored at start, so the suite's own
# process takes it back; the children then start with SIGINT at its default, as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class PhoneHandle:
    """A started VirtualPhone and how to reach it through the adb server."""

    phone: VirtualPhone
    serial: str
    adb: AdbServer

    @property
    def device(self) -> adbutils.AdbDevice:
        return self.adb.client.device(self.serial)

    def adb_cli(self, *args: str, input: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
        """Run the real `adb` command-line client against this phone, with `input` on its
        stdin (none: an empty stdin, so it never waits on the terminal)."""
        return subprocess.run(
            [adbutils.adb_path(), "-H", self.adb.host, "-P", str(self.adb.port), "-s", self.serial, *args],
            input=input, stdin=subprocess.DEVNULL if input is None else None, capture_output=True, timeout=timeout,
            env={k: v for k, v in os.environ.items() if k not in ("ANDROID_SERIAL", "ANDROID_ADB_SERVER_PORT")},
        )


def attach_phone(adb: AdbServer, phone: VirtualPhone) -> PhoneHandle:
    """Start `phone` (if needed), `adb connect` it and wait until it is online."""
    phone.start()
    serial = adb.connect_device(phone.address)
    return PhoneHandle(phone=phone, serial=serial, adb=adb)


def detach_phone(handle: PhoneHandle) -> None:
    try:
        handle.adb.client.disconnect(handle.serial)
    except adbutils.AdbError:
        pass  # already gone from the server's list
    finally:
        handle.phone.stop()


@pytest.fixture(scope="session")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbServer]:
    """The real adb server on a free port (outside 5555-5585) with a private HOME."""
    server = AdbServer(home=tmp_path_factory.mktemp("adb-home"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def virtual_phone(adb_server: AdbServer) -> Iterator[PhoneHandle]:
    """A fresh virtual phone, online on `adb_server` as `127.0.0.1:<port>`."""
    handle = attach_phone(adb_server, VirtualPhone())
    try:
        yield handle
    finally:
        detach_phone(handle)


@pytest.fixture
def phone_factory(adb_server: AdbServer) -> Iterator[Callable[..., PhoneHandle]]:
    """Start more phones in one test: `phone_factory(**VirtualPhone kwargs)`; all are
    detached and stopped at the end."""
    handles: list[PhoneHandle] = []

    def make(**kwargs: Any) -> PhoneHandle:
        handle = attach_phone(adb_server, VirtualPhone(**kwargs))
        handles.append(handle)
        return handle

    try:
        yield make
    finally:
        for handle in handles:
            detach_phone(handle)


@pytest.fixture(autouse=True)
def _private_user_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trajectories, memory profiles and other user data go to a temporary folder, never to the
    real user's (subprocesses inherit it)."""
    monkeypatch.setenv("PLANNER_AGENT_HOME", str(tmp_path_factory.mktemp("home")))


# Every module is one xdist group (`--dist loadgroup`): its tests run on one worker, so its module
# fixtures (a collected store, a trained release, a browser) are made once; the Ray package is one
# group, so a run starts one local Ray cluster, not one a worker. A test's own group mark wins.
RAY_TESTS = "tests/planner_runtime/ray/"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = item.nodeid.split("::", 1)[0]
            item.add_marker(pytest.mark.xdist_group("ray" if module.startswith(RAY_TESTS) else module))
