"""Bad input closes only the stream or connection it came on, with a log line, while the
phone and its neighbours in the same process keep serving. (Sync paths with `..`, garbage
before CNXN and unknown services through adbutils are in test_vp_robustness.)"""

from __future__ import annotations

import logging
import struct

import adbutils
import pytest
import uiautomator2 as u2

from device_farm.virtual.adbd.packets import A_CLSE, A_OKAY, A_OPEN, A_WRTE, HEADER, Packet
from tests.device_farm.virtual.raw_adb import RawAdb


@pytest.fixture
def neighbour(phone_factory):
    return phone_factory(serial="neighbour")


def still_serving(*handles) -> None:
    for handle in handles:
        assert handle.device.shell("echo alive") == "alive"
        assert u2.connect(handle.device).info["displayWidth"] == 1080


@pytest.mark.parametrize("garbage", [
    b"\x00\xffnot http at all\r\n\r\n",
    b"POST /jsonrpc/0 HTTP/1.1\r\nContent-Length: lots\r\n\r\n{}",
    b"POST /jsonrpc/0 HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n",
    b"GET /ping HTTP/1.1\r\nX: " + b"y" * 70_000,
])
def test_garbage_http_on_9008_closes_that_stream(virtual_phone, neighbour, caplog, garbage):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    conn = virtual_phone.device.create_connection(adbutils.Network.TCP, 9008)
    conn.settimeout(5)
    try:
        conn.sendall(garbage)
        assert conn.recv(100) == b""
    finally:
        conn.close()
    assert any("uiautomator2 server: closing stream" in r.getMessage() for r in caplog.records)
    still_serving(virtual_phone, neighbour)


def test_bad_json_rpc_is_an_error_reply_not_a_hangup(virtual_phone):
    conn = virtual_phone.device.create_connection(adbutils.Network.TCP, 9008)
    conn.settimeout(5)
    try:
        body = b"{not json"
        conn.sendall(b"POST /jsonrpc/0 HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        reply = conn.recv(4096)
    finally:
        conn.close()
    assert b"200 OK" in reply and b"-32700" in reply


def test_malformed_and_oversized_packets_close_that_connection(virtual_phone, neighbour, caplog):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    phone = virtual_phone.phone
    raw = RawAdb(phone)
    raw.sock.sendall(HEADER.pack(A_WRTE, 1, 1, 10, 0, 0x12345678))  # bad magic
    with pytest.raises(ConnectionError):
        raw.recv()
    raw.close()
    raw = RawAdb(phone)
    raw.sock.sendall(HEADER.pack(A_OPEN, 1, 0, 2 << 20, 0, A_OPEN ^ 0xFFFFFFFF))  # 2 MiB payload
    with pytest.raises(ConnectionError):
        raw.recv()
    raw.close()
    messages = [r.getMessage() for r in caplog.records]
    assert any("bad magic" in m for m in messages)
    assert any("exceeds" in m for m in messages)
    still_serving(virtual_phone, neighbour)


def test_unknown_services_are_refused_on_a_live_connection(virtual_phone, caplog):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    raw = RawAdb(virtual_phone.phone)
    try:
        for name in (b"nosuchservice:", b"\xff\xfe\x00binary", b"tcp:notaport", b"tcp:1234"):
            assert raw.open(name).command == A_CLSE
        raw.send(Packet(A_WRTE, 1, 999, b"to a stream that does not exist"))
        reply = raw.open(b"shell:echo same connection", local_id=7)
        assert reply.command == A_OKAY
        assert raw.read_until_close() == b"same connection\n"
    finally:
        raw.close()
    assert any("refusing service 'nosuchservice:'" in r.getMessage() for r in caplog.records)


def test_malformed_sync_requests_fail_that_stream(virtual_phone, caplog):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    raw = RawAdb(virtual_phone.phone)
    try:
        reply = raw.open(b"sync:")
        raw.write(reply, b"ZZZZ" + struct.pack("<I", 4) + b"/etc")
        assert raw.read_until_close().startswith(b"FAIL")
        reply = raw.open(b"sync:", local_id=2)
        raw.write(reply, b"RECV" + struct.pack("<I", 1 << 30), local_id=2)
        assert b"path too long" in raw.read_until_close()
        reply = raw.open(b"sync:", local_id=3)
        raw.write(reply, b"RECV" + struct.pack("<I", 20) + b"/sdcard/../etc/hosts", local_id=3)
        assert raw.read_until_close().startswith(b"FAIL")
    finally:
        raw.close()
    messages = [r.getMessage() for r in caplog.records]
    assert any("unknown sync command" in m for m in messages)
    assert any("byte path" in m for m in messages)
    assert virtual_phone.device.sync.exists("/sdcard")


def test_oversized_shell_v2_packet_closes_that_stream(virtual_phone, caplog):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    raw = RawAdb(virtual_phone.phone)
    try:
        reply = raw.open(b"shell,v2,raw:")
        raw.write(reply, struct.pack("<BI", 0, 1 << 30))
        raw.read_until_close()
        assert raw.open(b"shell:echo next", local_id=2).command == A_OKAY
        assert raw.read_until_close() == b"next\n"
    finally:
        raw.close()
    assert any("shell v2: closing stream" in r.getMessage() for r in caplog.records)
