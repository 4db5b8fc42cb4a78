"""The phone survives bad clients: refused paths, garbage on the wire, unknown services,
and several phones in one process stay independent."""

from __future__ import annotations

import socket
import struct
import time

import adbutils
import pytest


def test_sync_path_with_dotdot_fails_and_phone_keeps_serving(virtual_phone, tmp_path):
    d = virtual_phone.device
    with pytest.raises(adbutils.AdbError):
        d.sync.read_bytes("/sdcard/../data/local/tmp/x")
    r = virtual_phone.adb_cli("pull", "/sdcard/../etc/hosts", str(tmp_path / "h"))
    assert r.returncode != 0
    assert d.shell("echo still here") == "still here"


def test_garbage_on_the_adb_port_closes_only_that_connection(virtual_phone):
    with socket.create_connection((virtual_phone.phone.host, virtual_phone.phone.port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)))
        assert s.recv(100) == b""  # the phone hung up
    with socket.create_connection((virtual_phone.phone.host, virtual_phone.phone.port), timeout=5) as s:
        # a well-formed header with an oversized payload length is refused too
        s.sendall(struct.pack("<6I", 0x4E584E43, 0x01000001, 4096, 1 << 30, 0, 0x4E584E43 ^ 0xFFFFFFFF))
        assert s.recv(100) == b""
    assert virtual_phone.device.shell("echo ok") == "ok"


def test_unknown_service_is_refused(virtual_phone):
    with pytest.raises(adbutils.AdbError):
        virtual_phone.device.create_connection(adbutils.Network.LOCAL_ABSTRACT, "nothing")
    assert virtual_phone.device.shell("echo ok") == "ok"


def test_two_phones_in_one_process_are_independent(virtual_phone, phone_factory):
    other = phone_factory(serial="second-phone")
    a, b = virtual_phone.device, other.device
    a.shell("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR 8")
    a.sync.push(b"only on a", "/sdcard/a.txt")
    assert b.shell("content query --uri content://com.android.deskclock/alarms") == "No result found."
    assert not b.sync.exists("/sdcard/a.txt")
    assert b.getprop("ro.serialno") == "second-phone"
    assert a.getprop("ro.serialno") != "second-phone"
    assert a.app_current().package == "com.google.android.deskclock"
    assert b.app_current().package == "com.google.android.apps.nexuslauncher"


def test_dropped_connection_comes_back(virtual_phone):
    virtual_phone.phone.disconnect_host()
    # the adb server reconnects TCP devices on its own; the next command may need a retry
    for _ in range(50):
        try:
            assert virtual_phone.device.shell("echo back") == "back"
            break
        except adbutils.AdbError:
            time.sleep(0.2)
    else:
        pytest.fail("device did not come back")


def test_a_phone_stops_at_once_while_a_host_stays_connected():
    """Since Python 3.12.1 a listener's ``wait_closed()`` also waits for its open connections;
    waiting for it before ending them hung ``stop()`` for as long as the adb server stayed
    connected. The phone ends its connections first: by the time it waits for the listener,
    none is left (asserted as that newer contract, so the order is checked on every Python)."""
    from device_farm.virtual import VirtualPhone
    from tests.device_farm.virtual.raw_adb import RawAdb

    phone = VirtualPhone().start()
    adbd = phone._server
    listener = adbd._server
    original = listener.wait_closed
    open_when_waited: list[int] = []

    async def wait_closed() -> None:
        open_when_waited.append(len(adbd._connections))
        await original()

    listener.wait_closed = wait_closed
    with RawAdb(phone) as host:
        started = time.monotonic()
        phone.stop()
        assert time.monotonic() - started < 5
        assert open_when_waited == [0]
        host.sock.settimeout(5)
        assert host.sock.recv(1) == b""  # the host sees the phone hang up
