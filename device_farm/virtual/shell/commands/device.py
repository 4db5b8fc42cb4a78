"""Device-level commands: getprop/setprop, settings, input, dumpsys, uiautomator dump,
`cmd SERVICE`, and `app_process` for the uiautomator2 server class."""

from __future__ import annotations

import asyncio
import struct
from typing import Awaitable

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.os.intents import ComponentName
from device_farm.virtual.os.notifications import dumpsys_notification
from device_farm.virtual.os.screen import KEYCODES
from device_farm.virtual.shell.commands.am import am
from device_farm.virtual.shell.commands.pm import dumpsys_package, pm
from device_farm.virtual.shell.commands.wm import wm
from device_farm.virtual.shell.session import CommandContext
from device_farm.virtual.ui.views import hierarchy_xml
from device_farm.virtual.uiautomator.server import ABSTRACT_SOCKET

U2_MAIN_CLASS = "com.wetest.uia2.Main"


def getprop(ctx: CommandContext, args: list[str]) -> int:
    props = ctx.system.props
    if not args:
        for key in sorted(props):
            ctx.out(f"[{key}]: [{props[key]}]\n")
        return 0
    ctx.out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")
    return 0


def setprop(ctx: CommandContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err("setprop: need 2 arguments\n")
        return 1
    if args[0].startswith("ro."):
        ctx.err(f"Failed to set property '{args[0]}' to '{args[1]}'.\n")
        return 1
    ctx.system.props[args[0]] = args[1]
    return 0


def settings(ctx: CommandContext, args: list[str]) -> int:
    args = [a for a in args if a not in ("--user", "current", "0")] if "--user" in args else args
    if len(args) < 2 or args[1] not in ctx.system.settings:
        ctx.err("usage:  settings [--user <USER_ID> | current] get namespace key\n")
        return 1
    verb, table = args[0], ctx.system.settings[args[1]]
    if verb == "get" and len(args) == 3:
        ctx.out(table.get(args[2], "null") + "\n")
    elif verb == "put" and len(args) >= 4:
        table[args[2]] = args[3]
    elif verb == "delete" and len(args) == 3:
        ctx.out(f"Deleted {1 if table.pop(args[2], None) is not None else 0} rows\n")
    elif verb == "list":
        for key in sorted(table):
            ctx.out(f"{key}={table[key]}\n")
    else:
        ctx.err(f"Invalid command: {verb}\n")
        return 1
    return 0


def _keycode(name: str) -> int | None:
    if name.isdigit():
        return int(name)
    return KEYCODES.get(name.upper().removeprefix("KEYCODE_"))


def input_(ctx: CommandContext, args: list[str]) -> int:
    if args and args[0] in ("touchscreen", "keyboard", "mouse", "trackball", "stylus"):
        args = args[1:]
    if not args:
        ctx.err("Usage: input [<source>] <command> [<arg>...]\n")
        return 1
    verb, rest = args[0], args[1:]
    system = ctx.system
    try:
        if verb == "tap" and len(rest) == 2:
            system.tap(float(rest[0]), float(rest[1]))
        elif verb == "keyevent" and rest:
            for name in rest:
                if name.startswith("--"):
                    continue
                code = _keycode(name)
                if code is None:
                    ctx.err(f"Error: Unknown keycode {name}\n")
                    return 1
                system.key(code)
        elif verb == "text" and rest:
            system.input_text(" ".join(rest).replace("%s", " "))
        elif verb in ("swipe", "draganddrop") and len(rest) in (4, 5):
            x1, y1, x2, y2 = (float(v) for v in rest[:4])
            duration = int(rest[4]) if len(rest) == 5 else 300
            system.swipe(x1, y1, x2, y2, duration)
        elif verb in ("motionevent", "press", "roll", "scroll"):
            pass
        else:
            ctx.err(f"Error: Invalid arguments for command: {verb}\n")
            return 1
    except ValueError:
        ctx.err(f"Error: Invalid arguments for command: {verb}\n")
        return 1
    return 0


def dumpsys(ctx: CommandContext, args: list[str]) -> int:
    system = ctx.system
    service = args[0] if args else ""
    comp = system.current_component()
    token = f"{id(system.foreground) & 0xFFFFFFF:x}"
    if service == "window":
        _, focus = system.focus()
        # Since Android 10 `dumpsys window windows` lists the windows without the focus lines;
        # those are in `dumpsys window` and `dumpsys window displays`.
        ctx.out("WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
                f"  Window #0 Window{{{token} u0 {focus}}}:\n"
                f"    mDisplayId=0 rootTaskId=1 mSession=Session{{{token} 0:1000}}\n")
        if args[1:2] != ["windows"]:
            ctx.out(f"  mCurrentFocus=Window{{{token} u0 {focus}}}\n"
                    f"  mFocusedApp=ActivityRecord{{{token} u0 {comp.short()} t{len(system.stack)}}}\n")
    elif service == "activity" and args[1:2] == ["top"]:
        ctx.out(_activity_top(ctx))
    elif service == "activity":
        ctx.out(f"  mResumedActivity: ActivityRecord{{{token} u0 {comp.short()} t{len(system.stack)}}}\n")
    elif service == "package" and len(args) > 1:
        return dumpsys_package(ctx, args[1])
    elif service == "display":
        d = system.display
        ctx.out(f"  mDefaultViewport=DisplayViewport{{valid=true, orientation=0, "
                f"deviceWidth={d.width}, deviceHeight={d.height}}}\n")
    elif service == "power":
        on = system.screen_on
        ctx.out(f"  mWakefulness={'Awake' if on else 'Asleep'}\n"
                f"  mHoldingDisplaySuspendBlocker={'true' if on else 'false'}\n")
    elif service == "battery":
        return dumpsys_battery(ctx, args[1:])
    elif service == "notification":
        ctx.out(dumpsys_notification(system.notifications))
    elif service == "media_session":
        sessions = [s for app in system.apps.values() if (s := app.media_session()) is not None]
        ctx.out("MEDIA SESSION SERVICE (dumpsys media_session)\n\n"
                f"Sessions Stack - have {len(sessions)} sessions:\n" + "".join(sessions))
    elif service == "wifi":
        on = system.settings["global"].get("wifi_on") == "1"
        ctx.out(f"Wi-Fi is {'enabled' if on else 'disabled'}\n")
    else:
        ctx.out(f"Can't find service: {service}\n")
    return 0


def _activity_top(ctx: CommandContext) -> str:
    """`dumpsys activity top`: each task's top activity with its process id, the
    foreground task last (uiautomator2's app_current reads the pid from here)."""
    system = ctx.system
    pids = {p.name: p.pid for p in system.processes()}
    tops: dict[str, str] = {}
    for activity in system.stack:
        tops.pop(activity.package, None)  # a package's task moves up to its newest activity
        tops[activity.package] = activity.name
    lines = []
    for task_id, (package, name) in enumerate(tops.items(), 1):
        short = ComponentName(package, name).short()
        lines.append(f"TASK {package} id={task_id} userId=0\n"
                     f"  ACTIVITY {short} {id(package) & 0xFFFFFFF:x} pid={pids.get(package, 0)}\n")
    return "".join(lines)


def dumpsys_battery(ctx: CommandContext, args: list[str]) -> int:
    """`dumpsys battery` in Android 14's layout; `set level N` and `reset` as on a phone."""
    system = ctx.system
    if args[:2] == ["set", "level"] and len(args) == 3 and args[2].isdigit():
        system.battery_level = min(100, int(args[2]))
        return 0
    if args[:1] == ["reset"]:
        system.battery_level = 100
        return 0
    if args:
        ctx.err(f"Unknown option: {args[0]}\n")
        return 1
    level = system.battery_level
    ctx.out("Current Battery Service state:\n  AC powered: false\n  USB powered: true\n"
            "  Wireless powered: false\n  Dock powered: false\n  Max charging current: 500000\n"
            "  Max charging voltage: 5000000\n  Charge counter: 4200000\n"
            f"  status: {5 if level == 100 else 2}\n  health: 2\n  present: true\n"
            f"  level: {level}\n  scale: 100\n  voltage: 4400\n  temperature: 250\n"
            "  technology: Li-ion\n")
    return 0


SVC_SETTINGS = {"wifi": "wifi_on", "data": "mobile_data"}


def svc(ctx: CommandContext, args: list[str]) -> int:
    """`svc wifi|data enable|disable`, reflected in `settings get global wifi_on|mobile_data`."""
    if len(args) == 2 and args[0] in SVC_SETTINGS and args[1] in ("enable", "disable"):
        ctx.system.settings["global"][SVC_SETTINGS[args[0]]] = "1" if args[1] == "enable" else "0"
        return 0
    if args and args[0] in SVC_SETTINGS:
        noun = "Wi-Fi" if args[0] == "wifi" else "mobile data"
        ctx.err(f"Control the {noun} manager\n\nusage: svc {args[0]} [enable|disable]\n")
        return 1
    ctx.err("Available commands:\n    help\n    power\n    data\n    wifi\n    usb\n    nfc\n"
            "    bluetooth\n    system-server\n")
    return 1 if args else 0


async def uiautomator(ctx: CommandContext, args: list[str]) -> int:
    if not args or args[0] != "dump":
        ctx.err("Usage: uiautomator <subcommand> [options]\n  dump [--compressed] [file]\n")
        return 1
    if ctx.system.screen_delay():
        await asyncio.sleep(ctx.system.screen_delay())
    files = [a for a in args[1:] if not a.startswith("--")]
    path = files[0] if files else "/sdcard/window_dump.xml"
    try:
        ctx.system.fs.write(path, hierarchy_xml(ctx.system.window()).encode(), parents=False)
    except FsError as exc:
        ctx.err(f"ERROR: could not write {path}: {exc.args[0]}\n")
        return 1
    ctx.out(f"UI hierchary dumped to: {path}\n")
    return 0


async def app_process(ctx: CommandContext, args: list[str]) -> int:
    """Runs the uiautomator2 server class from its jar until the shell stream closes."""
    classpath = ctx.env.get("CLASSPATH", "")
    cls = next((a for a in args if not a.startswith(("-", "/")) and not a.isdigit()), "")
    if cls != U2_MAIN_CLASS:
        ctx.err(f"Error: Could not find class '{cls}'\n")
        return 1
    try:
        ctx.system.fs.read(classpath)
    except FsError:
        ctx.err(f"java.lang.ClassNotFoundException: Didn't find class \"{cls}\" on path: {classpath}\n")
        return 1
    port = int(args[args.index("-p") + 1]) if "-p" in args else 9008
    system = ctx.system
    handler = system.uiautomator_handler
    if port in system.listeners and system.ui_automation_connected or handler is None:
        ctx.err("java.lang.IllegalStateException: UiAutomationService "
                "android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@5deffd5"
                "already registered!\n")
        return 1
    # A server that lost UiAutomation no longer holds it: this launch takes over.
    if system.uiautomator_process is not None:
        system.uiautomator_process.set()
    died = asyncio.Event()
    system.listeners[port] = handler
    system.abstract_sockets[ABSTRACT_SOCKET] = handler
    system.ui_automation_connected = True
    system.uiautomator_process = died
    ctx.out("[server] INFO: [UiAutomator2Server] Starting Server\n")
    try:
        if ctx.flush is not None:
            await ctx.flush()
        await died.wait()
    finally:
        if system.uiautomator_process is died:
            system.uiautomator_process = None
            if system.listeners.get(port) is handler:
                del system.listeners[port]
            if system.abstract_sockets.get(ABSTRACT_SOCKET) is handler:
                del system.abstract_sockets[ABSTRACT_SOCKET]
    ctx.err("java.lang.IllegalStateException: UiAutomation not connected\n"
            "[server] INFO: [UiAutomator2Server] Server stopped\n")
    return 1


def statusbar(ctx: CommandContext, args: list[str]) -> int:
    """`cmd statusbar expand-notifications | collapse`."""
    if args[:1] == ["expand-notifications"]:
        if not ctx.system.dialogs:
            ctx.system.shade_open = True
    elif args[:1] == ["collapse"]:
        ctx.system.shade_open = False
    else:
        ctx.err("usage: cmd statusbar [expand-notifications|collapse]\n")
        return 1
    return 0


def cmd(ctx: CommandContext, args: list[str]) -> int | Awaitable[int]:
    services = {"package": pm, "activity": am, "settings": settings, "window": wm, "input": input_,
                "statusbar": statusbar}
    if not args:
        ctx.err("cmd: No service specified; use -l to list all running services.\n")
        return 1
    if args[0] == "-l":
        ctx.out("Currently running services:\n" + "".join(f"  {s}\n" for s in services))
        return 0
    handler = services.get(args[0])
    if handler is None:
        ctx.err(f"cmd: Can't find service: {args[0]}\n")
        return 20
    return handler(ctx, args[1:])


async def screencap(ctx: CommandContext, args: list[str]) -> int:
    """`screencap [-p] [-d ID] [FILE]`: PNG with -p or a `.png` file, else the raw dump
    (width, height, format RGBA_8888, colour space sRGB as u32 LE, then the pixels)."""
    if ctx.system.screen_delay():
        await asyncio.sleep(ctx.system.screen_delay())
    rest, png, i = [], False, 0
    while i < len(args):
        if args[i] == "-p":
            png = True
        elif args[i] == "-d":
            i += 1
        elif args[i] == "-h":
            ctx.err("usage: screencap [-hp] [-d display-id] [FILENAME]\n")
            return 0
        elif args[i].startswith("-"):
            ctx.err(f"screencap: invalid option -- {args[i].lstrip('-')}\n")
            return 1
        else:
            rest.append(args[i])
        i += 1
    path = rest[0] if rest else None
    if png or (path or "").endswith(".png"):
        data = ctx.system.screenshot("png")
    else:
        raw = ctx.system.renderer.image(ctx.system.window(), ctx.system.status_bar(),
                                        ctx.system.screen_on).convert("RGBA").tobytes()
        data = struct.pack("<4I", ctx.system.display.width, ctx.system.display.height, 1, 1) + raw
    if path is None:
        ctx.stdout += data
        return 0
    try:
        ctx.system.fs.write(path, data)
    except FsError as exc:
        ctx.err(f"Error opening file: {path} ({exc.args[0]})\n")
        return 1
    return 0
