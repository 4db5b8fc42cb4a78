"""The virtual phone through the real adb CLI and adbutils: shell v1/v2, exit codes,
push/pull, ls, exec-out, sync stat/list, and a raw tcp:9008 connection."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import adbutils
import pytest


def test_cli_shell_echo(virtual_phone):
    r = virtual_phone.adb_cli("shell", "echo", "hi")
    assert (r.returncode, r.stdout) == (0, b"hi\n")


@pytest.mark.parametrize("command, status", [("exit 3", 3), ("false", 1), ("true && exit 7", 7)])
def test_cli_shell_exit_status_propagates_over_v2(virtual_phone, command, status):
    assert virtual_phone.adb_cli("shell", command).returncode == status


def test_cli_shell_separates_stderr_and_reports_unknown_command(virtual_phone):
    r = virtual_phone.adb_cli("shell", "frobnicate")
    assert r.returncode == 127
    assert r.stdout == b""
    assert b"/system/bin/sh: frobnicate: inaccessible or not found" in r.stderr


def test_cli_push_pull_round_trip_200k(virtual_phone, tmp_path: Path):
    data = os.urandom(200_000)
    src, back = tmp_path / "a.bin", tmp_path / "b.bin"
    src.write_bytes(data)
    assert virtual_phone.adb_cli("push", str(src), "/sdcard/Download/a.bin").returncode == 0
    assert virtual_phone.adb_cli("pull", "/sdcard/Download/a.bin", str(back)).returncode == 0
    assert back.read_bytes() == data
    md5 = virtual_phone.adb_cli("shell", "md5sum /sdcard/Download/a.bin").stdout.decode().split()[0]
    assert md5 == hashlib.md5(data).hexdigest()


def test_cli_push_creates_parent_dirs_and_ls_lists(virtual_phone, tmp_path: Path):
    src = tmp_path / "note.txt"
    src.write_text("hello")
    assert virtual_phone.adb_cli("push", str(src), "/sdcard/new/dir/note.txt").returncode == 0
    r = virtual_phone.adb_cli("ls", "/sdcard/new/dir")
    assert r.returncode == 0 and b"note.txt" in r.stdout
    assert virtual_phone.adb_cli("shell", "ls /sdcard/new/dir").stdout == b"note.txt\n"


def test_cli_pull_missing_file_fails(virtual_phone, tmp_path: Path):
    r = virtual_phone.adb_cli("pull", "/sdcard/nope.txt", str(tmp_path / "x"))
    assert r.returncode != 0
    assert b"No such file or directory" in r.stderr


def test_cli_exec_out_is_raw(virtual_phone):
    r = virtual_phone.adb_cli("exec-out", "echo one; echo two")
    assert r.stdout == b"one\ntwo\n"


def test_adbutils_shell_and_shell2_exit_codes(virtual_phone):
    d = virtual_phone.device
    assert d.shell("echo hi") == "hi"
    assert d.shell2("ls /nope").returncode == 1
    assert d.shell2("echo ok; false").returncode == 1
    assert d.shell2("false || echo fallback").output == "fallback\n"
    v2 = d.shell2("echo out; ls /nope", v2=True)
    assert (v2.returncode, v2.stdout, v2.stderr) == (1, "out\n", "ls: /nope: No such file or directory\n")


def test_adbutils_sync_push_pull_stat_list(virtual_phone, tmp_path: Path):
    d = virtual_phone.device
    d.sync.push(b"payload", "/data/local/tmp/p.txt")
    assert d.sync.read_bytes("/data/local/tmp/p.txt") == b"payload"
    info = d.sync.stat("/data/local/tmp/p.txt")
    assert info.size == 7 and info.mtime is not None
    assert not d.sync.exists("/data/local/tmp/absent")
    names = {f.path for f in d.sync.list("/data/local/tmp")}
    assert "p.txt" in names
    d.sync.pull("/data/local/tmp/p.txt", tmp_path / "p.txt")
    assert (tmp_path / "p.txt").read_bytes() == b"payload"


def test_adbutils_raw_http_ping_on_tcp_9008(virtual_phone):
    sock = virtual_phone.device.create_connection(adbutils.Network.TCP, 9008)
    try:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n")
        reply = b""
        while not reply.endswith(b"pong"):
            chunk = sock.recv(4096)
            assert chunk
            reply += chunk
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 200 OK")


def test_tcp_to_a_port_nobody_listens_on_is_refused(virtual_phone):
    with pytest.raises(adbutils.AdbError):
        virtual_phone.device.create_connection(adbutils.Network.TCP, 9999)


def test_getprop_and_wm_size(virtual_phone):
    d = virtual_phone.device
    assert d.getprop("ro.build.version.sdk") == "34"
    assert d.getprop("sys.boot_completed") == "1"
    assert d.shell("wm size") == "Physical size: 1080x2400"
    assert d.window_size() == (1080, 2400)
