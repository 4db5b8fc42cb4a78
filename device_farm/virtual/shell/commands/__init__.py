"""The command registry of the virtual phone's shell: name -> command callable."""

from __future__ import annotations

from typing import Awaitable

from device_farm.virtual.shell.commands.am import am, monkey
from device_farm.virtual.shell.commands.content import content
from device_farm.virtual.shell.commands.device import (
    app_process, cmd, dumpsys, getprop, input_, screencap, settings, setprop, svc, uiautomator,
)
from device_farm.virtual.shell.commands.generate import COMMANDS as GENERATE_COMMANDS
from device_farm.virtual.shell.commands.grep import COMMANDS as GREP_COMMANDS
from device_farm.virtual.shell.commands.pm import pm
from device_farm.virtual.shell.commands.sed import COMMANDS as SED_COMMANDS
from device_farm.virtual.shell.commands.sh import sh
from device_farm.virtual.shell.commands.text import COMMANDS as TEXT_COMMANDS
from device_farm.virtual.shell.commands.toybox import COMMANDS as BASE_COMMANDS
from device_farm.virtual.shell.commands.wm import wm
from device_farm.virtual.shell.session import Command, CommandContext

TOYBOX: dict[str, Command] = {**BASE_COMMANDS, **GREP_COMMANDS, **TEXT_COMMANDS, **SED_COMMANDS, **GENERATE_COMMANDS}
"""What `toybox NAME` runs (and what Android links into /system/bin as toybox)."""


def toybox(ctx: CommandContext, args: list[str]) -> int | Awaitable[int]:
    if not args:
        ctx.out(" ".join(sorted(TOYBOX)) + "\n")
        return 0
    command = TOYBOX.get(args[0])
    if command is None:
        ctx.err(f"toybox: Unknown command {args[0]}\n")
        return 1
    return command(ctx, args[1:])


def default_commands() -> dict[str, Command]:
    """Every command the shell knows, by basename."""
    table: dict[str, Command] = dict(TOYBOX)
    table.update({
        "toybox": toybox, "sh": sh, "am": am, "monkey": monkey, "pm": pm, "content": content,
        "getprop": getprop, "setprop": setprop, "settings": settings, "wm": wm, "input": input_,
        "dumpsys": dumpsys, "uiautomator": uiautomator, "app_process": app_process, "cmd": cmd,
        "screencap": screencap, "svc": svc,
    })
    return table
