"""How large a shell command a phone takes, checked before anything is sent.

Two limits hold on every Android phone, whatever carries the command there:

- one argument of a program is at most 128 KiB (Linux ``MAX_ARG_STRLEN``, 32 pages, its NUL
  included): ``am start --es``, ``content insert --bind`` or ``input text`` with a longer value
  fail with ``Argument list too long`` however the shell got the command;
- a whole command is capped at 1 MiB here. Nothing a phone does with a command line needs
  more (files travel over the sync protocol, not the shell), adb's own payload limit is 1 MiB,
  and Binder's per-process transaction buffer is 1 MiB, so no intent or content value that
  large could reach an app anyway.

Past either, :class:`~device_farm.errors.CommandTooLong` says how large the text was and what
the limit is; the virtual phone refuses the same commands a real one would, with the same hint.
"""

from __future__ import annotations

from typing import Sequence

from device_farm.errors import CommandTooLong

MAX_ARG_BYTES = 128 * 1024 - 1
MAX_COMMAND_BYTES = 1024 * 1024
CHECK_ABOVE_CHARS = MAX_ARG_BYTES // 4
"""A command of at most this many characters cannot break a limit (UTF-8 takes at most 4 bytes
a character): shorter ones skip the check, so the hot path pays one comparison."""


def _size(n: int) -> str:
    return f"{n:,} bytes ({n / 1024:,.0f} KiB)"


def _preview(text: str) -> str:
    head = " ".join(text[:40].split())
    return head + "..." if len(text) > 40 else head


def check_command(command: str | Sequence[str], text: str) -> None:
    """Refuse ``command`` (``text`` as it goes to the shell) when one of its arguments is over
    :data:`MAX_ARG_BYTES` or the whole is over :data:`MAX_COMMAND_BYTES`. A command given as one
    string has no known arguments: only its whole size is checked."""
    if not isinstance(command, str):
        for arg in command:
            size = len(arg.encode())
            if size > MAX_ARG_BYTES:
                raise CommandTooLong(
                    f"text is {_size(size)}; the limit for one value on a phone is {_size(MAX_ARG_BYTES)} "
                    f"(the kernel's cap on one program argument): shorten it or split it into parts "
                    f"(it begins {_preview(arg)!r})"
                )
    size = len(text.encode())
    if size > MAX_COMMAND_BYTES:
        raise CommandTooLong(
            f"the command is {_size(size)}; a phone's shell takes at most {_size(MAX_COMMAND_BYTES)}: "
            "send less text in one call (split it into several)"
        )
