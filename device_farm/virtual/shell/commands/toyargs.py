"""Arguments and inputs as toybox's filters take them: bundled single-letter flags (`-rn`),
options with values given apart or joined (`-n 5`, `-n5`, `-k2,2`), `--` and `-` for stdin,
and the `cmd: FILE: No such file or directory` line (exit status 1) for a file not there."""

from __future__ import annotations

from dataclasses import dataclass, field

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.commands.toybox import abspath
from device_farm.virtual.shell.session import CommandContext


class UsageError(ValueError):
    """Arguments the command refuses; the message is toybox's (`Unknown option 'x'`)."""


@dataclass
class Options:
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    operands: list[str] = field(default_factory=list)

    def last(self, letter: str, default: str | None = None) -> str | None:
        given = self.values.get(letter)
        return given[-1] if given else default


def parse(args: list[str], bools: str, valued: str = "") -> Options:
    """Flags in `bools`, options taking a value in `valued`; operands keep their order
    (toybox lets options follow operands, as `sort FILE -r` shows)."""
    opts = Options()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            opts.operands.extend(args[i + 1 :])
            break
        if not arg.startswith("-") or arg == "-":
            opts.operands.append(arg)
            i += 1
            continue
        j = 1
        while j < len(arg):
            letter = arg[j]
            if letter in valued:
                value = arg[j + 1 :]
                if not value:
                    i += 1
                    if i >= len(args):
                        raise UsageError(f"Missing argument to -{letter}")
                    value = args[i]
                opts.values.setdefault(letter, []).append(value)
                break
            if letter not in bools:
                raise UsageError(f"Unknown option '{letter}'")
            opts.flags.add(letter)
            j += 1
        i += 1
    return opts


def integer(text: str) -> int:
    """A count as toybox's atolx reads it, or `not integer: TEXT`."""
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"not integer: {text}") from None


def inputs(ctx: CommandContext, name: str, files: list[str]) -> tuple[list[tuple[str, bytes]], int]:
    """(file name, content) for each operand, stdin for none or `-`; status 1 if one was
    missing (its error line is already on stderr)."""
    found: list[tuple[str, bytes]] = []
    status = 0
    for path in files or ["-"]:
        if path == "-":
            found.append(("-", ctx.stdin))
            continue
        try:
            found.append((path, ctx.system.fs.read(abspath(path))))
        except FsError as exc:
            ctx.err(f"{name}: {path}: {exc.args[0]}\n")
            status = 1
    return found, status


def lines_of(data: bytes) -> list[bytes]:
    """Lines with their newline; a last line without one is kept as it is."""
    return data.splitlines(keepends=True)
