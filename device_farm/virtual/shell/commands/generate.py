"""toybox `seq` and `yes`: commands that write output without reading any.

The shell runs a pipeline's commands one after another, each writing into a buffer, so a
writer never learns that its reader has gone. Both write in chunks, giving the event loop back
between them (the other phones of a loop keep running, and closing the session stops them),
and stop at `OUTPUT_CAP` bytes: `yes` as it ends on a phone when its reader closes (status 141,
killed by SIGPIPE, nothing on stderr), `seq` with a line saying its output was cut short.
"""

from __future__ import annotations

import asyncio
import math
import re

from device_farm.virtual.shell.commands.toyargs import UsageError
from device_farm.virtual.shell.session import Command, CommandContext

OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes one of these commands writes before it stops: far more than any reader here takes."""
CHUNK = 64 * 1024
SIGPIPE_STATUS = 128 + 13
_FLOAT_FORMAT = re.compile(r"%[-+ #0]*\d*(\.\d+)?[aAeEfFgG]")


async def yes(ctx: CommandContext, args: list[str]) -> int:
    line = (" ".join(args) if args else "y") + "\n"
    chunk = line * max(1, CHUNK // len(line))
    while len(ctx.stdout) < OUTPUT_CAP:
        ctx.out(chunk)
        await asyncio.sleep(0)
    return SIGPIPE_STATUS


def _number(text: str) -> tuple[float, int]:
    """The value and the digits after its point (toybox's precision, `1.234e5` bug included)."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"strtod {text}: Invalid argument") from None
    if not math.isfinite(value):
        raise UsageError(f"strtod {text}: Numerical result out of range")
    point = text.find(".")
    return value, len(re.split("[eE]", text[point + 1 :])[0]) if point >= 0 else 0


def _options(args: list[str]) -> tuple[set[str], dict[str, str], list[str]]:
    """seq's flags, valued options and operands. Its option string passes unknown options
    through as operands (toybox's `?`), so `seq 5 -2 1` counts down."""
    flags: set[str] = set()
    values: dict[str, str] = {}
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "-s"):
            if i + 1 >= len(args):
                raise UsageError(f"Missing argument to {arg}")
            values[arg[1]] = args[i + 1]
            i += 1
        elif arg[:2] in ("-f", "-s"):
            values[arg[1]] = arg[2:]
        elif arg == "-w":
            flags.add("w")
        else:
            operands.append(arg)
        i += 1
    return flags, values, operands


def _plan(args: list[str]) -> tuple[float, float, float, str, str]:
    """(first, increment, last, format, separator) from seq's arguments."""
    flags, values_given, operands = _options(args)
    if not operands:
        raise UsageError("Need 1 argument")
    if len(operands) > 3:
        raise UsageError("Max 3 arguments")
    if "w" in flags and "f" in values_given:
        raise UsageError("No 'f' with 'w'")
    parsed = [_number(a) for a in operands]
    values = [v for v, _ in parsed]
    precision = max(p for _, p in parsed)
    first, increment, last = (1.0, 1.0, values[0]) if len(values) == 1 else (
        (values[0], 1.0, values[1]) if len(values) == 2 else tuple(values))
    fmt = values_given.get("f")
    if fmt is not None:
        if len(_FLOAT_FORMAT.findall(fmt)) != 1 or fmt.count("%") - 2 * fmt.count("%%") != 1:
            raise UsageError(f"bad -f '{fmt}'")
    else:
        fmt = f"%.{precision}f"
        if "w" in flags:
            width = max(len(fmt % v) for v in (first, increment, last))
            fmt = f"%0{width}.{precision}f"
    return first, increment, last, fmt, values_given.get("s", "\n")


async def seq(ctx: CommandContext, args: list[str]) -> int:
    try:
        first, increment, last, fmt, sep = _plan(args)
    except UsageError as exc:
        ctx.err(f"seq: {exc}\n")
        return 1
    if not increment:
        return 0  # toybox prints nothing rather than counting forever: "use yes"
    i, written, pending = 0, 0, []
    while True:
        value = first + i * increment  # multiplied, not summed: no drift
        if (increment < 0 and value < last) or (increment > 0 and value > last):
            break
        pending.append((sep if i else "") + fmt % value)
        i += 1
        if len(pending) >= 4096:
            text = "".join(pending)
            pending.clear()
            ctx.out(text)
            written += len(text)
            if written >= OUTPUT_CAP:
                ctx.out("\n")
                ctx.err(f"seq: output cut short after {written} bytes\n")
                return 1
            await asyncio.sleep(0)
    ctx.out("".join(pending) + ("\n" if i else ""))
    return 0


COMMANDS: dict[str, Command] = {"seq": seq, "yes": yes}
