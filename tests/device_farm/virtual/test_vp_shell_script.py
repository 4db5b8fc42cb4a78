"""A script on the shell's stdin without a pty (`adb shell < script`, and how hosts send
commands too long for a service name): commands run as sh reads them, a newline inside quotes
continuing the command, whatever the pieces the input arrives in."""

from __future__ import annotations

import pytest

from device_farm.virtual.services.shell_service import ScriptReader

SCRIPT = (
    b"echo 'one\ntwo'\n"
    b"echo \"three\nfour \\\" still\"  # it's a comment, its quote opens nothing\n"
    b"echo it\\'s; echo \\\\\n"
    b"\n"
    b"exit 4\n"
    b"echo never"
)


def test_adb_shell_runs_a_script_with_newlines_inside_quotes(virtual_phone):
    r = virtual_phone.adb_cli("shell", input=SCRIPT)
    assert r.stdout == b"one\ntwo\nthree\nfour \" still\nit's\n\\\n", r.stderr
    assert r.returncode == 4


@pytest.mark.parametrize("piece", [1, 2, 7, len(SCRIPT)])
def test_commands_are_the_same_whatever_the_pieces(piece):
    reader = ScriptReader()
    commands = []
    for start in range(0, len(SCRIPT), piece):
        commands += reader.feed(SCRIPT[start : start + piece])
    commands += reader.finish()
    assert commands == [
        "echo 'one\ntwo'",
        "echo \"three\nfour \\\" still\"  # it's a comment, its quote opens nothing",
        "echo it\\'s; echo \\\\",
        "exit 4",
        "echo never",
    ]


def test_an_escaped_newline_does_not_end_a_command():
    reader = ScriptReader()
    assert reader.feed(b"echo a\\\nb\necho c\\") == ["echo a\\\nb"]
    assert reader.feed(b"\nd") == [] and reader.finish() == ["echo c\\\nd"]


def test_an_unclosed_quote_at_the_end_is_a_syntax_error(virtual_phone):
    r = virtual_phone.adb_cli("shell", input=b"echo ok\necho 'open\nand on")
    assert r.stdout == b"ok\n" and b"unterminated" in r.stderr and r.returncode != 0
