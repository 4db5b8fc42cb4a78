"""The phone's shell language (parsed and run on a phone's system, no transport) and the
interactive shell streams (pty with echo and CR->NL; stdin scripts) through adb."""

from __future__ import annotations

import asyncio
import struct
import subprocess

import adbutils
import pytest

from device_farm.virtual.apps import default_apps
from device_farm.virtual.shell.commands import default_commands
from device_farm.virtual.shell.session import CommandContext, ShellSession
from device_farm.virtual.os.system import AndroidSystem


def run(line: str) -> tuple[int, str, str]:
    async def go() -> tuple[int, str, str]:
        system = AndroidSystem("unit", default_apps())
        try:
            session = ShellSession(system, default_commands())
            ctx = CommandContext(system, session.env, b"")
            status = await session.run(line, ctx)
            return status, ctx.stdout.decode(), ctx.stderr.decode()
        finally:
            system.shutdown()

    return asyncio.run(go())


@pytest.mark.parametrize("line, out", [
    ("echo a; echo b", "a\nb\n"),
    ("false; echo $?", "1\n"),
    ("true && echo yes || echo no", "yes\n"),
    ("false && echo yes || echo no", "no\n"),
    ("echo 'single $HOME' \"double ${USER}\" esc\\ aped", "single $HOME double shell esc aped\n"),
    ("X=1; echo $X", "1\n"),
    ("echo hi > /sdcard/f; cat /sdcard/f; echo more >> /sdcard/f; cat /sdcard/f", "hi\nhi\nmore\n"),
    ("ls /nope 2>&1", "ls: /nope: No such file or directory\n"),
    ("ls /nope 2>/dev/null; echo $?", "1\n"),
    ("getprop | grep -c sdk", "1\n"),
    ("echo abc | md5sum", "0bee89b07a248e27c83fc3d5951213c1  -\n"),
    ("mkdir -p /sdcard/a/b && ls /sdcard/a", "b\n"),
    ("echo x; exit 4; echo never", "x\n"),
])
def test_shell_language(line, out):
    assert run(line)[1] == out


def test_unknown_command_and_syntax_error():
    assert run("nosuch arg") == (127, "", "/system/bin/sh: nosuch: inaccessible or not found\n")
    status, _, err = run("echo 'open")
    assert status != 0 and "unterminated" in err


def _v2(ident: int, data: bytes) -> bytes:
    return struct.pack("<BI", ident, len(data)) + data


def test_interactive_pty_echoes_and_maps_cr(virtual_phone):
    conn = virtual_phone.device.open_transport()
    try:
        conn.send_command("shell,v2,TERM=xterm-256color,pty:")
        conn.check_okay()
        conn.conn.sendall(_v2(0, b"echo hi\r") + _v2(0, b"exit 5\r"))
        out, status = b"", None
        while status is None:
            ident, length = struct.unpack("<BI", conn.read_exact(5))
            data = conn.read_exact(length)
            if ident == 1:
                out += data
            elif ident == 3:
                status = data[0]
    finally:
        conn.close()
    assert status == 5
    assert b"echo hi\r\n" in out  # the typed line is echoed, CR became a new line
    assert b"\r\nhi\r\n" in out  # output NL is CRNL on a pty
    assert b":/ $ " in out  # a prompt


def test_commands_from_stdin_without_pty(virtual_phone):
    r = subprocess.run(
        [adbutils.adb_path(), "-P", str(virtual_phone.adb.port), "-s", virtual_phone.serial, "shell"],
        input=b"echo one\necho two", capture_output=True, timeout=30,
    )
    assert r.stdout == b"one\ntwo\n"
