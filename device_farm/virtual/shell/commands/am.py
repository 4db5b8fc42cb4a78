"""`am` and `monkey`: start activities from intents built on the command line, force-stop
apps, send broadcasts. Output mirrors Android 14 (`Starting: Intent { ... }`)."""

from __future__ import annotations

from device_farm.virtual.os.intents import (
    ACTION_MAIN, CATEGORY_LAUNCHER, FLAG_ACTIVITY_NEW_TASK, ComponentName, Intent,
)
from device_farm.virtual.shell.session import CommandContext

_EXTRA_PARSERS = {
    "--es": str, "-e": str, "--ei": int, "--el": int, "--ef": float, "--ed": float,
    "--eu": str, "--ecn": str,
    "--ez": lambda v: v.lower() in ("true", "t", "1"),
    "--eia": lambda v: [int(x) for x in v.split(",")],
    "--ela": lambda v: [int(x) for x in v.split(",")],
    "--esa": lambda v: v.split(","),
}
_IGNORED_WITH_VALUE = {"--user", "-P", "--start-profiler", "--sampling", "--display",
                       "--windowingMode", "--activityType", "-R", "--receiver-permission"}


class UsageError(ValueError):
    """Bad `am` arguments; the message is printed to stderr."""


def parse_intent(args: list[str]) -> tuple[Intent, set[str]]:
    """Build an Intent from am's intent arguments; also return the option flags seen."""
    intent = Intent()
    options: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]

        def value(offset: int = 1) -> str:
            if i + offset >= len(args):
                raise UsageError(f"Error: No argument for option {a}")
            return args[i + offset]

        if a == "-a":
            intent.action, i = value(), i + 2
        elif a == "-d":
            intent.data, i = value(), i + 2
        elif a == "-t":
            intent.mime_type, i = value(), i + 2
        elif a == "-c":
            intent.categories.append(value())
            i += 2
        elif a == "-n":
            try:
                intent.component = ComponentName.parse(value())
            except ValueError as exc:
                raise UsageError(f"Error: {exc}") from exc
            i += 2
        elif a == "-p":
            intent.package, i = value(), i + 2
        elif a == "-f":
            intent.flags |= int(value(), 0)
            i += 2
        elif a in _EXTRA_PARSERS:
            try:
                intent.extras[value()] = _EXTRA_PARSERS[a](value(2))
            except ValueError as exc:
                raise UsageError(f"Error: bad value for {a}: {exc}") from exc
            i += 3
        elif a == "--esn":
            intent.extras[value()] = None
            i += 2
        elif a in _IGNORED_WITH_VALUE:
            i += 2
        elif a.startswith("-"):
            options.add(a)
            i += 1
        else:
            if "/" in a and not a.startswith(("content:", "http:", "https:", "tel:", "file:")) and "://" not in a:
                intent.component = ComponentName.parse(a)
            else:
                intent.data = a
            i += 1
    return intent, options


def _start(ctx: CommandContext, args: list[str]) -> int:
    try:
        intent, options = parse_intent(args)
    except UsageError as exc:
        ctx.err(f"{exc}\n")
        return 1
    ctx.out(f"Starting: {intent.to_short_string()}\n")
    if "-S" in options:
        target = ctx.system.resolve(intent)
        if not isinstance(target, str):
            ctx.system.force_stop(target[0].package)
    intent.flags |= FLAG_ACTIVITY_NEW_TASK
    result = ctx.system.start_activity(intent)
    if result.error is not None:
        ctx.err(result.error + "\n")
        return 1
    if result.delivered_to_top:
        ctx.err("Warning: Activity not started, intent has been delivered to currently running "
                "top-most instance.\n")
    if "-W" in options:
        comp = ctx.system.current_component()
        ctx.out(f"Status: ok\nLaunchState: COLD\nActivity: {comp.short()}\nTotalTime: 120\n"
                "WaitTime: 122\nComplete\n")
    return 0


def am(ctx: CommandContext, args: list[str]) -> int:
    if not args:
        ctx.err("Activity manager (activity) commands:\n  start [options] INTENT\n  force-stop PACKAGE\n")
        return 1
    verb, rest = args[0], args[1:]
    if verb in ("start", "start-activity"):
        return _start(ctx, rest)
    if verb in ("force-stop", "kill"):
        packages = [a for a in rest if not a.startswith("-") and a != "current" and not a.isdigit()]
        for package in packages:
            ctx.system.force_stop(package)
        return 0
    if verb == "broadcast":
        try:
            intent, _ = parse_intent(rest)
        except UsageError as exc:
            ctx.err(f"{exc}\n")
            return 1
        ctx.out(f"Broadcasting: {intent.to_short_string()}\nBroadcast completed: result=0\n")
        return 0
    if verb == "get-current-user":
        ctx.out("0\n")
        return 0
    ctx.err(f"Error: Unknown command: {verb}\n")
    return 255


def monkey(ctx: CommandContext, args: list[str]) -> int:
    for a in args:
        ctx.out(f"  bash arg: {a}\n")
    package = args[args.index("-p") + 1] if "-p" in args and args.index("-p") + 1 < len(args) else None
    app = ctx.system.apps.get(package or "")
    if app is None or not app.LAUNCHER_ACTIVITY:
        ctx.err("** No activities found to run, monkey aborted.\n")
        return 252
    ctx.out("args: [" + ", ".join(args) + "]\n")
    ctx.system.start_activity(Intent(ACTION_MAIN, package=app.package,
                                     categories=[CATEGORY_LAUNCHER], flags=FLAG_ACTIVITY_NEW_TASK))
    ctx.out("Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, "
            "12ms not connected)\n")
    return 0
