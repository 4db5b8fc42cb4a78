"""`sh` (mksh, /system/bin/sh): `sh -c 'SCRIPT' [NAME [ARG...]]`, `sh FILE [ARG...]`, and
`sh` reading its script from stdin, each in a child session with a copy of the caller's
environment and its own positional parameters, as a forked shell would run it."""

from __future__ import annotations

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.commands.toybox import abspath
from device_farm.virtual.shell.session import SHELL_PATH, CommandContext, ShellSession
from device_farm.virtual.shell.syntax import ShellSyntaxError, tokenize

MAX_DEPTH = 32
"""Nested shells a phone runs before `can't fork` (a script that runs itself ends here)."""
IGNORED_OPTIONS = set("aefhiklmnpruvxX")


async def sh(ctx: CommandContext, args: list[str]) -> int:
    parent = ctx.shell
    if parent is None:
        raise RuntimeError("sh runs only inside a shell session")
    script: str | None = None
    i = 0
    while i < len(args) and args[i].startswith(("-", "+")) and args[i] not in ("-", "--"):
        if "c" in args[i]:
            if i + 1 >= len(args):
                ctx.err(f"{SHELL_PATH}: -c: option requires an argument\n")
                return 1
            script = args[i + 1]
            i += 2
            break
        if not set(args[i][1:]) <= IGNORED_OPTIONS:
            ctx.err(f"{SHELL_PATH}: {args[i]}: unknown option\n")
            return 1
        i += 1
    rest = args[i + 1 :] if i < len(args) and args[i] == "--" else args[i:]
    name = SHELL_PATH
    if script is None and rest and rest[0] != "-":
        name, rest = rest[0], rest[1:]
        try:
            script = ctx.system.fs.read(abspath(name)).decode("utf-8", "replace")
        except FsError as exc:
            ctx.err(f"{SHELL_PATH}: {name}: {exc.args[0]}\n")
            return 127
    elif script is None:
        script = ctx.stdin.decode("utf-8", "replace")
    elif rest:
        name, rest = rest[0], rest[1:]
    if parent.depth >= MAX_DEPTH:
        ctx.err(f"{SHELL_PATH}: can't fork: Resource temporarily unavailable\n")
        return 1
    env = {k: v for k, v in ctx.env.items() if not (k.isdigit() or k in ("#", "@", "*"))}
    env.update({"0": name, "#": str(len(rest)), "@": " ".join(rest), "*": " ".join(rest), "?": "0"})
    env.update({str(n): arg for n, arg in enumerate(rest[:9], 1)})
    child = ShellSession(ctx.system, parent.commands, env=env, depth=parent.depth + 1)
    out = CommandContext(ctx.system, child.env, ctx.stdin)
    status = 0
    for line in _lines(script):
        if child.exited:
            break
        status = await child.run(line, out)
    ctx.stdout += out.stdout
    ctx.stderr += out.stderr
    return status


def _lines(script: str) -> list[str]:
    """The script's command lines; a quote left open runs on to the next line."""
    lines: list[str] = []
    pending = ""
    for line in script.split("\n"):
        pending = f"{pending}\n{line}" if pending else line
        try:
            tokenize(pending)
        except ShellSyntaxError as exc:
            if "unterminated" in str(exc):
                continue
        if pending.strip():
            lines.append(pending)
        pending = ""
    if pending.strip():
        lines.append(pending)  # still open at the end: the parser reports it
    return lines
