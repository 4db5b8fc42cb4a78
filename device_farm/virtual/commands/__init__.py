"""The command registry of the virtual phone's shell: name -> command callable."""

from __future__ import annotations

from device_farm.virtual.commands.am import am, monkey
from device_farm.virtual.commands.content import content
from device_farm.virtual.commands.device import (
    app_process, cmd, dumpsys, getprop, input_, screencap, settings, setprop, svc, uiautomator,
)
from device_farm.virtual.commands.pm import pm
from device_farm.virtual.commands.toybox import COMMANDS as TOYBOX_COMMANDS, toybox
from device_farm.virtual.commands.wm import wm
from device_farm.virtual.shell import Command


def default_commands() -> dict[str, Command]:
    """Every command the shell knows, by basename."""
    table: dict[str, Command] = dict(TOYBOX_COMMANDS)
    table.update({
        "toybox": toybox, "am": am, "monkey": monkey, "pm": pm, "content": content,
        "getprop": getprop, "setprop": setprop, "settings": settings, "wm": wm, "input": input_,
        "dumpsys": dumpsys, "uiautomator": uiautomator, "app_process": app_process, "cmd": cmd,
        "screencap": screencap, "svc": svc,
    })
    return table
