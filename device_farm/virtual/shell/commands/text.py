"""toybox's text filters: head, tail, wc, sort, cut, tr and uniq, over files or stdin, byte
for byte in toybox's output formats (`wc`'s column rule, `==> f <==` headers, `uniq -c`'s
`%7lu ` counts) and exit statuses, so they work in pipelines as on a phone."""

from __future__ import annotations

import re
from typing import Callable, TypeVar

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.commands.toyargs import UsageError, inputs, integer, lines_of, parse
from device_farm.virtual.shell.commands.toybox import abspath
from device_farm.virtual.shell.session import Command, CommandContext

T = TypeVar("T")


def _usage(name: str, status: int = 1) -> Callable[[Callable[[CommandContext, list[str]], int]], Command]:
    """Answer a UsageError with toybox's `name: message` line and `status`."""
    def wrap(run: Callable[[CommandContext, list[str]], int]) -> Command:
        def command(ctx: CommandContext, args: list[str]) -> int:
            try:
                return run(ctx, args)
            except UsageError as exc:
                ctx.err(f"{name}: {exc}\n")
                return status
        command.__doc__ = run.__doc__
        return command
    return wrap


def _old_count(args: list[str]) -> list[str]:
    """`head -5` / `tail -5`: the old spelling of `-n 5`."""
    if args and re.fullmatch(r"-\d+", args[0]):
        return ["-n", args[0][1:]] + args[1:]
    return args


def _header(ctx: CommandContext, index: int, name: str) -> None:
    ctx.out(("\n" if index else "") + f"==> {'standard input' if name == '-' else name} <==\n")


@_usage("head")
def head(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(_old_count(args), "qv", "nc")
    lines, count = integer(opts.last("n", "10") or "10"), opts.last("c")
    files, status = inputs(ctx, "head", opts.operands)
    for index, (name, data) in enumerate(files):
        if (len(opts.operands) > 1 and "q" not in opts.flags) or "v" in opts.flags:
            _header(ctx, index, name)
        if count is not None:
            ctx.stdout += data[: max(0, integer(count))]
        else:
            ctx.stdout += b"".join(lines_of(data)[: max(0, lines)])
    return status


@_usage("tail")
def tail(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(_old_count(args), "fFq", "ncs")
    by_bytes = opts.last("c")
    spec = by_bytes if by_bytes is not None else (opts.last("n", "10") or "10")
    from_start = spec.startswith("+")
    amount = abs(integer(spec.lstrip("+")))
    files, status = inputs(ctx, "tail", opts.operands)
    for index, (name, data) in enumerate(files):
        if len(opts.operands) > 1 and "q" not in opts.flags:
            _header(ctx, index, name)
        parts: list[bytes] | bytes = data if by_bytes is not None else lines_of(data)
        if from_start:
            chosen = parts[max(0, amount - 1):]
        else:
            chosen = parts[len(parts) - amount:] if amount else parts[:0]
        ctx.stdout += chosen if isinstance(chosen, bytes) else b"".join(chosen)
    return status


WC_ORDER = "lwmcL"


@_usage("wc")
def wc(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(args, "Lcmwl")
    shown = [f for f in WC_ORDER if f in opts.flags] or ["l", "w", "c"]
    files, status = inputs(ctx, "wc", opts.operands)
    # toybox pads to 7 unless one file is counted, or stdin alone for one number.
    space = 0 if len(opts.operands) == 1 or (not opts.operands and len(shown) == 1) else 7
    totals = dict.fromkeys(WC_ORDER, 0)

    def show(counts: dict[str, int], name: str | None) -> None:
        cells = [f"{counts[f]:>{space}}" for f in shown]
        ctx.out(" ".join(cells) + (f" {name}" if name is not None else "") + "\n")

    for name, data in files:
        text = data.decode("utf-8", "replace")
        counts = {"l": data.count(b"\n"), "w": len(data.split()), "m": len(text), "c": len(data),
                  "L": max((len(line.expandtabs(8)) for line in text.splitlines()), default=0)}
        for f in WC_ORDER:
            totals[f] = max(totals[f], counts[f]) if f == "L" else totals[f] + counts[f]
        show(counts, name if opts.operands else None)
    if len(opts.operands) > 1:
        show(totals, "total")
    return status


_NUMBER = re.compile(rb"\s*(-?(?:\d+\.?\d*|\.\d+))")


def _sort_key(line: bytes, flags: set[str]) -> tuple[int, float, bytes]:
    text = line.lstrip() if "b" in flags else line
    if "f" in flags:
        text = text.upper()
    if "n" in flags:
        m = _NUMBER.match(text)
        return (0, float(m.group(1)) if m else 0.0, b"")
    return (0, 0.0, text)


def _fields(line: bytes, sep: bytes | None) -> list[bytes]:
    if sep is not None:
        return line.split(sep)
    return re.findall(rb"\s*\S+", line) or [line]  # blanks lead their field, as POSIX sorts


def _key_range(spec: str) -> tuple[int, int | None, str]:
    m = re.fullmatch(r"(\d+)(?:\.\d+)?([bdfinr]*)(?:,(\d+)(?:\.\d+)?([bdfinr]*))?", spec)
    if m is None or int(m.group(1)) < 1:
        raise UsageError("Unknown key option.")
    return int(m.group(1)), int(m.group(3)) if m.group(3) else None, (m.group(2) or "") + (m.group(4) or "")


@_usage("sort", status=2)
def sort(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(args, "bCcdfgiMnrsuxVz", "okt")
    sep_text = opts.last("t")
    sep = sep_text.encode() if sep_text else None
    keys = [_key_range(k) for k in opts.values.get("k", [])]
    files, status = inputs(ctx, "sort", opts.operands)
    if status:
        return 2
    lines = [line.rstrip(b"\n") for _, data in files for line in lines_of(data)]

    def key(line: bytes) -> tuple[tuple[int, float, bytes], ...]:
        if not keys:
            return (_sort_key(line, opts.flags),)
        parts = _fields(line, sep)
        out = []
        for start, end, local in keys:
            chosen = parts[start - 1 : end if end is not None else len(parts)]
            joiner = sep if sep is not None else b""
            out.append(_sort_key(joiner.join(chosen), opts.flags | set(local)))
        return tuple(out)

    reverse = "r" in opts.flags or any("r" in local for _, _, local in keys)
    stable = "s" in opts.flags or "u" in opts.flags
    ordered = sorted(lines, key=(key if stable else lambda line: (key(line), line)), reverse=reverse)
    if "c" in opts.flags or "C" in opts.flags:
        for n, (a, b) in enumerate(zip(lines, lines[1:]), 2):
            if (key(b) < key(a)) != reverse and key(a) != key(b):
                if "c" in opts.flags:
                    ctx.err(f"sort: {files[0][0]}: Check line {n}\n")
                return 1
        return 0
    if "u" in opts.flags:
        unique: list[bytes] = []
        for line in ordered:
            if not unique or key(unique[-1]) != key(line):
                unique.append(line)
        ordered = unique
    result = b"".join(line + b"\n" for line in ordered)
    target = opts.last("o")
    if target is None:
        ctx.stdout += result
        return 0
    try:
        ctx.system.fs.write(abspath(target), result)
    except FsError as exc:
        ctx.err(f"sort: {target}: {exc.args[0]}\n")
        return 2
    return 0


def _ranges(spec: str) -> list[tuple[int, int | None]]:
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d*)(-?)(\d*)", part)
        if m is None or not (m.group(1) or m.group(3)) or (m.group(1) and int(m.group(1)) < 1):
            raise UsageError(f"bad list '{spec}'")
        low = int(m.group(1)) if m.group(1) else 1
        high = (int(m.group(3)) if m.group(3) else None) if m.group(2) else low
        out.append((low, high))
    return out


def _select(items: list[T], ranges: list[tuple[int, int | None]]) -> list[T]:
    return [item for n, item in enumerate(items, 1)
            if any(low <= n and (high is None or n <= high) for low, high in ranges)]


@_usage("cut")
def cut(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(args, "sDn", "bcfdO")
    chosen = [letter for letter in "bcf" if letter in opts.values]
    if len(chosen) > 1:
        raise UsageError(f"No '{chosen[1]}' with '{chosen[0]}'")
    if not chosen:
        raise UsageError("no selections")
    mode = chosen[0]
    if "s" in opts.flags and mode != "f":
        raise UsageError("-s needs -Ff")
    if "d" in opts.values and mode != "f":
        raise UsageError("-d needs -Ff")
    ranges = _ranges(opts.values[mode][-1])
    delim = (opts.last("d", "\t") or "\t").encode()[:1] or b"\t"
    out_delim = (opts.last("O") or "").encode() or delim
    files, status = inputs(ctx, "cut", opts.operands)
    for _, data in files:
        for line in lines_of(data):
            body = line.rstrip(b"\n")
            if mode == "f":
                if delim not in body:
                    if "s" not in opts.flags:
                        ctx.stdout += body + b"\n"
                    continue
                ctx.stdout += out_delim.join(_select(body.split(delim), ranges)) + b"\n"
            elif mode == "c":
                ctx.out("".join(_select(list(body.decode("utf-8", "replace")), ranges)) + "\n")
            else:
                ctx.stdout += b"".join(_select([bytes([b]) for b in body], ranges)) + b"\n"
    return status


TR_CLASSES = {
    "alpha": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "digit": "0123456789",
    "lower": "abcdefghijklmnopqrstuvwxyz", "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "space": " \t\n\r\f\v", "blank": " \t", "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "xdigit": "0123456789ABCDEFabcdef",
}
TR_CLASSES["alnum"] = TR_CLASSES["alpha"] + TR_CLASSES["digit"]
TR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _tr_set(spec: str) -> str:
    chars: list[str] = []
    i = 0
    while i < len(spec):
        if spec.startswith("[:", i) and (end := spec.find(":]", i)) > 0:
            name = spec[i + 2 : end]
            if name not in TR_CLASSES:
                raise UsageError(f"bad class {name}")
            chars.extend(TR_CLASSES[name])
            i = end + 2
            continue
        c = spec[i]
        if c == "\\" and i + 1 < len(spec):
            octal = re.match(r"[0-7]{1,3}", spec[i + 1 :])
            if octal:
                c, i = chr(int(octal.group(), 8)), i + 1 + len(octal.group())
            else:
                c, i = TR_ESCAPES.get(spec[i + 1], spec[i + 1]), i + 2
        else:
            i += 1
        if i + 1 < len(spec) and spec[i] == "-":
            high = spec[i + 1]
            if ord(high) < ord(c):
                raise UsageError(f"bad range {c}-{high}")
            chars.extend(chr(o) for o in range(ord(c), ord(high) + 1))
            i += 2
        else:
            chars.append(c)
    return "".join(chars)


@_usage("tr")
def tr(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(args, "Ccsd")
    if not opts.operands:
        raise UsageError("Need 1 argument")
    if len(opts.operands) > 2:
        raise UsageError("Max 2 arguments")
    text = ctx.stdin.decode("latin-1")
    first = _tr_set(opts.operands[0])
    if opts.flags & {"c", "C"}:
        first = "".join(chr(o) for o in range(256) if chr(o) not in first)
    second = _tr_set(opts.operands[1]) if len(opts.operands) > 1 else ""
    if "d" in opts.flags:
        text = "".join(c for c in text if c not in first)
        squeeze = second
    elif second:
        padded = second + second[-1] * max(0, len(first) - len(second))
        table = {ord(a): b for a, b in zip(first, padded)}
        text = text.translate(table)
        squeeze = second
    else:
        squeeze = first
    if "s" in opts.flags:
        text = re.sub("([" + re.escape(squeeze) + "])\\1+", r"\1", text) if squeeze else text
    ctx.stdout += text.encode("latin-1")
    return 0


@_usage("uniq")
def uniq(ctx: CommandContext, args: list[str]) -> int:
    opts = parse(args, "cduiz", "fsw")
    skip_fields, skip_chars = integer(opts.last("f", "0") or "0"), integer(opts.last("s", "0") or "0")
    width = integer(opts.last("w")) if opts.last("w") is not None else None
    files, status = inputs(ctx, "uniq", opts.operands[:1])
    if status:
        return status
    lines = [line.rstrip(b"\n") for line in lines_of(files[0][1])]

    def key(line: bytes) -> bytes:
        rest = line
        for _ in range(skip_fields):
            rest = re.sub(rb"^\s*\S+", b"", rest, count=1)
        rest = rest[skip_chars:]
        rest = rest[:width] if width is not None else rest
        return rest.lower() if "i" in opts.flags else rest

    out = bytearray()
    i = 0
    while i < len(lines):
        j = i + 1
        while j < len(lines) and key(lines[j]) == key(lines[i]):
            j += 1
        repeats = j - i
        if not ("d" in opts.flags and repeats == 1) and not ("u" in opts.flags and repeats > 1):
            out += (f"{repeats:7d} ".encode() if "c" in opts.flags else b"") + lines[i] + b"\n"
        i = j
    if len(opts.operands) > 1:
        try:
            ctx.system.fs.write(abspath(opts.operands[1]), bytes(out))
        except FsError as exc:
            ctx.err(f"uniq: {opts.operands[1]}: {exc.args[0]}\n")
            return 1
    else:
        ctx.stdout += out
    return 0


COMMANDS: dict[str, Command] = {
    "head": head, "tail": tail, "wc": wc, "sort": sort, "cut": cut, "tr": tr, "uniq": uniq,
}
