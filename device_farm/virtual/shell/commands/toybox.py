"""Toybox-style commands over the phone's file system and text: echo, cat, ls, rm, mkdir,
md5sum, touch, printf, sleep, true/false, id, whoami, ps, pidof and date (grep, the text filters
and `toybox NAME` itself are in their own modules).

Messages follow toybox's wording (`ls: /x: No such file or directory`) so clients that
parse them behave as on a phone.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import stat
import time

from device_farm.virtual.os.fs import FsError, Node
from device_farm.virtual.shell.session import Command, CommandContext


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


_PRINTF_SPEC = re.compile(r"%([-+ #0]*)(\d+)?(?:\.(\d+))?([diouxXeEfgGcsb%])")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            '"': '"', "'": "'"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(0[0-7]{0,3}|[0-7]{1,3}|.)",
                  lambda m: chr(int(m.group(1), 8)) if m.group(1)[0] in "01234567"
                  else _ESCAPES.get(m.group(1), "\\" + m.group(1)), text)


def printf(ctx: CommandContext, args: list[str]) -> int:
    """`printf FORMAT [ARG...]`: the format is reused while arguments remain, as in toybox."""
    if not args:
        ctx.err("printf: Need 1 argument\n")
        return 1
    fmt, rest = _unescape(args[0]), list(args[1:])
    status = 0

    def convert(m: re.Match[str]) -> str:
        nonlocal status
        flags, width, precision, kind = m.groups()
        if kind == "%":
            return "%"
        arg = rest.pop(0) if rest else ""
        spec = "%" + flags + (width or "") + (f".{precision}" if precision is not None else "")
        if kind in "sb":
            return (spec + "s") % (_unescape(arg) if kind == "b" else arg)
        if kind == "c":
            return (spec + "s") % arg[:1]
        try:
            number: float = float(arg or 0) if kind in "eEfgG" else int(arg or 0, 0)
        except ValueError:
            ctx.err(f"printf: invalid number '{arg}'\n")
            status = 1
            number = 0
        return (spec + ("d" if kind in "iu" else kind)) % number

    while True:
        before = len(rest)
        ctx.out(_PRINTF_SPEC.sub(convert, fmt))
        if not rest or len(rest) == before:
            return status


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


COMMANDS: dict[str, Command] = {
    "echo": echo, "printf": printf, "cat": cat, "ls": ls, "rm": rm, "mkdir": mkdir, "touch": touch,
    "md5sum": md5sum, "sleep": sleep, "true": true, "false": false, "id": ident,
    "whoami": whoami, "ps": ps, "pidof": pidof, "date": date,
}

