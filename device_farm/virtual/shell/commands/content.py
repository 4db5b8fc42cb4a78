"""`content query|insert|update|delete` over the phone's content providers, printing rows
exactly as Android's `content` tool does (`Row: 0 _id=1, hour=7, ...`, `NULL`,
`No result found.`)."""

from __future__ import annotations

from typing import Any

from device_farm.virtual.os.content import ContentUri, ProviderError
from device_farm.virtual.shell.session import CommandContext

USAGE = ("usage: adb shell content [subcommand] [options]\n"
         "  content query --uri <URI> [--user <USER_ID>] [--projection <PROJECTION>]"
         " [--where <WHERE>] [--sort <SORT_ORDER>]\n"
         "  content insert --uri <URI> --bind <BINDING> [--bind <BINDING>...]\n"
         "  content update --uri <URI> [--where <WHERE>] --bind <BINDING>...\n"
         "  content delete --uri <URI> [--where <WHERE>]\n")


class ContentUsage(ValueError):
    """Bad `content` arguments."""


def _bind(text: str) -> tuple[str, Any]:
    name, sep, rest = text.partition(":")
    kind, sep2, raw = rest.partition(":")
    if not sep or not sep2 and kind != "n":
        raise ContentUsage(f"Binding not well formed: {text}")
    try:
        value: Any = {
            "s": str, "i": int, "l": int, "f": float, "d": float,
            "b": lambda v: 1 if v.lower() == "true" else 0, "n": lambda v: None,
        }[kind](raw)
    except KeyError as exc:
        raise ContentUsage(f"Unsupported type: {kind}") from exc
    except ValueError as exc:
        raise ContentUsage(f"Bad value for {name}: {raw}") from exc
    return name, value


def _format(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "BLOB"
    return str(value)


def content(ctx: CommandContext, args: list[str]) -> int:
    if not args or args[0] not in ("query", "insert", "update", "delete"):
        ctx.err(USAGE)
        return 1
    verb = args[0]
    opts: dict[str, str] = {}
    binds: dict[str, Any] = {}
    try:
        i = 1
        while i < len(args):
            key = args[i]
            if i + 1 >= len(args):
                raise ContentUsage(f"Argument expected after \"{key}\"")
            if key == "--bind":
                name, value = _bind(args[i + 1])
                binds[name] = value
            elif key in ("--uri", "--projection", "--where", "--sort", "--user", "--extra"):
                opts[key] = args[i + 1]
            else:
                raise ContentUsage(f"Unsupported argument: {key}")
            i += 2
        if "--uri" not in opts:
            raise ContentUsage("Content provider URI not specified. Did you specify --uri argument?")
        if verb == "insert" and not binds:
            raise ContentUsage("Bindings not specified. Did you specify --bind argument(s)?")
    except ContentUsage as exc:
        ctx.err(f"Error: {exc}\n{USAGE}")
        return 1
    try:
        uri = ContentUri.parse(opts["--uri"])
    except ProviderError as exc:
        ctx.err(f"Error while accessing provider:{opts['--uri']}\n{exc}\n")
        return 1
    provider = ctx.system.content_provider(uri.authority)
    if provider is None:
        ctx.err(f"Error while accessing provider:{uri.authority}\n"
                f"java.lang.IllegalArgumentException: Unknown authority {uri.authority}\n")
        return 1
    where = opts.get("--where")
    try:
        if verb == "query":
            projection = opts["--projection"].split(":") if "--projection" in opts else None
            columns, rows = provider.query(uri, projection, where, opts.get("--sort"))
            if not rows:
                ctx.out("No result found.\n")
            for n, row in enumerate(rows):
                cells = ", ".join(f"{c}={_format(v)}" for c, v in zip(columns, row))
                ctx.out(f"Row: {n} {cells}\n")
        elif verb == "insert":
            provider.insert(uri, binds)
        elif verb == "update":
            provider.update(uri, binds, where)
        else:
            provider.delete(uri, where)
    except ProviderError as exc:
        ctx.err(f"Error while accessing provider:{uri.authority}\n{exc}\n")
        return 1
    return 0
