"""Stream services beyond shell and sync, through the real adb CLI and adbutils: exec-in
(`exec:` with stdin), stdin for shell v2 commands, `localabstract:` bridging, and the
features the phone advertises."""

from __future__ import annotations

import hashlib
import socket

import adbutils
import pytest

from device_farm.virtual.adbd.server import FEATURES


def test_exec_in_writes_stdin_to_a_file(virtual_phone):
    data = bytes(range(256)) * 2000  # 512 KB of every byte value: no line discipline in the way
    result = virtual_phone.adb_cli("exec-in", "cat > /data/local/tmp/f.bin", input=data)
    assert result.returncode == 0, result.stderr
    d = virtual_phone.device
    assert d.shell("md5sum /data/local/tmp/f.bin") == f"{hashlib.md5(data).hexdigest()}  /data/local/tmp/f.bin"
    assert d.sync.read_bytes("/data/local/tmp/f.bin") == data


def test_exec_in_appends_and_runs_the_rest_of_the_line(virtual_phone):
    virtual_phone.adb_cli("exec-in", "mkdir -p /sdcard/in && cat > /sdcard/in/log", input=b"one\n")
    virtual_phone.adb_cli("exec-in", "cat >> /sdcard/in/log", input=b"two\n")
    assert virtual_phone.device.shell("cat /sdcard/in/log") == "one\ntwo"


def test_shell_v2_commands_read_stdin_until_close_stdin(virtual_phone):
    data = b"hello from the host\n" * 100
    result = virtual_phone.adb_cli("shell", "md5sum", input=data)
    assert result.stdout.decode() == f"{hashlib.md5(data).hexdigest()}  -\n"
    result = virtual_phone.adb_cli("shell", "grep an", input=b"apple\nbanana\ncherry\n")
    assert (result.returncode, result.stdout) == (0, b"banana\n")
    # a command that names its input does not wait for stdin
    virtual_phone.device.shell("echo kept > /sdcard/k.txt")
    result = virtual_phone.adb_cli("exec-out", "echo out; cat /sdcard/k.txt", input=b"ignored")
    assert result.stdout == b"out\nkept\n"


def test_exec_out_of_a_reader_with_a_redirect_does_not_wait(virtual_phone):
    virtual_phone.device.shell("echo saved > /sdcard/s.txt")
    result = virtual_phone.adb_cli("exec-out", "cat < /sdcard/s.txt")
    assert result.stdout == b"saved\n"


def http_ping(sock: socket.socket) -> bytes:
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n")
    reply = b""
    while not reply.endswith(b"pong"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        reply += chunk
    return reply


def test_localabstract_reaches_the_uiautomator2_server(virtual_phone):
    sock = virtual_phone.device.create_connection(adbutils.Network.LOCAL_ABSTRACT, "uiautomator2")
    try:
        assert http_ping(sock).startswith(b"HTTP/1.1 200 OK")
    finally:
        sock.close()


def test_adb_forward_to_localabstract(virtual_phone):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = virtual_phone.adb_cli("forward", f"tcp:{port}", "localabstract:uiautomator2")
    assert result.returncode == 0, result.stderr
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            assert http_ping(sock).startswith(b"HTTP/1.1 200 OK")
        listed = virtual_phone.adb_cli("forward", "--list").stdout.decode()
        assert f"tcp:{port} localabstract:uiautomator2" in listed
    finally:
        virtual_phone.adb_cli("forward", "--remove", f"tcp:{port}")


def test_unknown_abstract_socket_is_refused_and_the_phone_keeps_serving(virtual_phone):
    with pytest.raises(adbutils.AdbError) as refused:
        virtual_phone.device.create_connection(adbutils.Network.LOCAL_ABSTRACT, "chrome_devtools_remote")
    assert "closed" in str(refused.value)
    assert virtual_phone.device.shell("echo still here") == "still here"


def test_a_dead_uiautomator2_server_leaves_its_abstract_socket(virtual_phone):
    virtual_phone.phone.inject({"kind": "uiautomator_crash", "mode": "dead"})
    with pytest.raises(adbutils.AdbError):
        virtual_phone.device.create_connection(adbutils.Network.LOCAL_ABSTRACT, "uiautomator2")


def test_the_banner_advertises_only_implemented_features(virtual_phone):
    features = set(virtual_phone.device.get_features().split(","))
    assert features == set(FEATURES)
    # shell_v2 is what gives the adb CLI the exit status
    assert virtual_phone.adb_cli("shell", "exit 3").returncode == 3
    assert not {"abb", "abb_exec", "sendrecv_v2", "track_app", "apex", "remount_shell"} & features
