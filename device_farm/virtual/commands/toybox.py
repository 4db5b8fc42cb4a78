"""Toybox-style commands over the phone's file system and text: echo, cat, ls, rm, mkdir,
md5sum, touch, grep, sleep, true/false, id, ps, pidof, and `toybox NAME` itself.

Messages follow toybox's wording (`ls: /x: No such file or directory`) so clients that
parse them behave as on a phone.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import stat
import time
from typing import Awaitable

from device_farm.virtual.fs import FsError, Node
from device_farm.virtual.shell import Command, CommandContext


def abspath(path: str) -> str:
    """The shell's working directory is '/'."""
    return path if path.startswith("/") else "/" + path


def split_flags(args: list[str]) -> tuple[set[str], list[str]]:
    """Single-letter flags (`-rf` -> {r, f}) and the remaining operands."""
    flags: set[str] = set()
    rest: list[str] = []
    for i, a in enumerate(args):
        if a == "--":
            rest.extend(args[i + 1 :])
            break
        if a.startswith("-") and len(a) > 1 and not rest:
            flags.update(a[1:])
        else:
            rest.append(a)
    return flags, rest


def echo(ctx: CommandContext, args: list[str]) -> int:
    newline, escapes = True, False
    while args and args[0] in ("-n", "-e", "-ne", "-en", "-E"):
        newline = newline and "n" not in args[0]
        escapes = escapes or "e" in args[0]
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = text.encode().decode("unicode_escape")
    ctx.out(text + ("\n" if newline else ""))
    return 0


def cat(ctx: CommandContext, args: list[str]) -> int:
    _, paths = split_flags(args)
    if not paths:
        ctx.stdout += ctx.stdin
        return 0
    status = 0
    for p in paths:
        try:
            ctx.stdout += ctx.system.fs.read(abspath(p))
        except FsError as exc:
            ctx.err(f"cat: {p}: {exc.args[0]}\n")
            status = 1
    return status


def _long_line(name: str, node: Node) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(node.mtime))
    return f"{stat.filemode(node.mode)} 1 shell shell {node.size:>8} {when} {name}"


def ls(ctx: CommandContext, args: list[str]) -> int:
    flags, paths = split_flags(args)
    fs = ctx.system.fs
    status = 0
    paths = paths or ["/"]
    for p in paths:
        try:
            node = fs.lookup(abspath(p))
        except FsError as exc:
            ctx.err(f"ls: {p}: {exc.args[0]}\n")
            status = 1
            continue
        if node is None:
            ctx.err(f"ls: {p}: No such file or directory\n")
            status = 1
            continue
        if len(paths) > 1 and node.is_dir:
            ctx.out(f"{p}:\n")
        if not node.is_dir or "d" in flags:
            entries = [(p, node)]
        else:
            entries = fs.listdir(abspath(p))
            if "a" in flags:
                entries = [(".", node), ("..", node)] + entries
            elif "A" not in flags:
                entries = [e for e in entries if not e[0].startswith(".")]
        for name, child in entries:
            ctx.out((_long_line(name, child) if "l" in flags else name) + "\n")
    return status


def rm(ctx: CommandContext, args: list[str]) -> int:
    flags, paths = split_flags(args)
    status = 0
    for p in paths:
        try:
            ctx.system.fs.remove(abspath(p), recursive="r" in flags or "R" in flags)
        except FsError as exc:
            if "f" in flags and exc.args[0] == "No such file or directory":
                continue
            ctx.err(f"rm: {p}: {exc.args[0]}\n")
            status = 1
    return status


def mkdir(ctx: CommandContext, args: list[str]) -> int:
    flags, paths = split_flags(args)
    status = 0
    for p in paths:
        try:
            ctx.system.fs.mkdir(abspath(p), parents="p" in flags)
        except FsError as exc:
            ctx.err(f"mkdir: {p}: {exc.args[0]}\n")
            status = 1
    return status


def touch(ctx: CommandContext, args: list[str]) -> int:
    _, paths = split_flags(args)
    for p in paths:
        try:
            ctx.system.fs.write(abspath(p), b"", append=True)
        except FsError as exc:
            ctx.err(f"touch: {p}: {exc.args[0]}\n")
            return 1
    return 0


def md5sum(ctx: CommandContext, args: list[str]) -> int:
    _, paths = split_flags(args)
    if not paths:
        ctx.out(f"{hashlib.md5(ctx.stdin).hexdigest()}  -\n")
        return 0
    status = 0
    for p in paths:
        try:
            ctx.out(f"{hashlib.md5(ctx.system.fs.read(abspath(p))).hexdigest()}  {p}\n")
        except FsError as exc:
            ctx.err(f"md5sum: {p}: {exc.args[0]}\n")
            status = 1
    return status


def grep(ctx: CommandContext, args: list[str]) -> int:
    flags, rest = split_flags(args)
    if not rest:
        ctx.err("grep: Need 1 argument\n")
        return 2
    pattern, files = rest[0], rest[1:]
    if "F" in flags:
        pattern = re.escape(pattern)
    regex = re.compile(pattern, re.IGNORECASE if "i" in flags else 0)
    data = ctx.stdin
    if files:
        try:
            data = b"".join(ctx.system.fs.read(abspath(f)) for f in files)
        except FsError as exc:
            ctx.err(f"grep: {files[0]}: {exc.args[0]}\n")
            return 2
    matched = 0
    for line in data.decode("utf-8", "replace").splitlines():
        hit = regex.search(line) is not None
        if hit != ("v" in flags):
            matched += 1
            if "q" not in flags and "c" not in flags:
                ctx.out(line + "\n")
    if "c" in flags:
        ctx.out(f"{matched}\n")
    return 0 if matched else 1


async def sleep(ctx: CommandContext, args: list[str]) -> int:
    try:
        await asyncio.sleep(float(args[0]) if args else 0)
    except ValueError:
        ctx.err(f"sleep: invalid number '{args[0]}'\n")
        return 1
    return 0


def true(ctx: CommandContext, args: list[str]) -> int:
    return 0


def false(ctx: CommandContext, args: list[str]) -> int:
    return 1


def ident(ctx: CommandContext, args: list[str]) -> int:
    ctx.out("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),"
            "1011(adb),1015(sdcard_rw),1028(sdcard_r),3003(inet) context=u:r:shell:s0\n")
    return 0


def whoami(ctx: CommandContext, args: list[str]) -> int:
    ctx.out("shell\n")
    return 0


def ps(ctx: CommandContext, args: list[str]) -> int:
    ctx.out("USER           PID  PPID        VSZ    RSS WCHAN            ADDR S NAME\n")
    ctx.out("root             1     0   10904384  11520 do_epoll_wait       0 S init\n")
    for proc in ctx.system.processes():
        ctx.out(f"{proc.user:<10} {proc.pid:>7} {proc.ppid:>5} {15012345:>10} {123456:>6} "
                f"do_epoll_wait       0 S {proc.name}\n")
    return 0


def pidof(ctx: CommandContext, args: list[str]) -> int:
    pids = [str(p.pid) for p in ctx.system.processes() if p.name in args]
    if not pids:
        return 1
    ctx.out(" ".join(pids) + "\n")
    return 0


def date(ctx: CommandContext, args: list[str]) -> int:
    now = ctx.system.now()
    if args and args[0] == "+%s":
        ctx.out(f"{int(now)}\n")
    else:
        ctx.out(time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now)) + "\n")
    return 0


def toybox(ctx: CommandContext, args: list[str]) -> int | Awaitable[int]:
    if not args:
        ctx.out(" ".join(sorted(COMMANDS)) + "\n")
        return 0
    command = COMMANDS.get(args[0])
    if command is None:
        ctx.err(f"toybox: Unknown command {args[0]}\n")
        return 1
    return command(ctx, args[1:])


COMMANDS: dict[str, Command] = {
    "echo": echo, "cat": cat, "ls": ls, "rm": rm, "mkdir": mkdir, "touch": touch,
    "md5sum": md5sum, "grep": grep, "sleep": sleep, "true": true, "false": false, "id": ident,
    "whoami": whoami, "ps": ps, "pidof": pidof, "date": date,
}

