"""toybox `grep` (and `egrep`, `fgrep`) with POSIX basic and extended regexes, answered in
toybox's words: `grep: bad regex '(': parentheses not balanced` and exit status 2.

Every phone of a process shares one event loop, so a pattern that backtracks without end
(`(a+)+$` on a long line of `a`s) must not hold that loop. Matching runs in a worker thread
with the `regex` package releasing the interpreter lock, under a time budget; past it grep
gives up with status 2, where a real phone's regexec would have answered.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Awaitable

import regex

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.commands.toyargs import UsageError, parse
from device_farm.virtual.shell.commands.toybox import abspath
from device_farm.virtual.shell.session import Command, CommandContext

MATCH_BUDGET_S = 2.0
"""How long one grep may spend matching before it gives up (a real phone needs microseconds)."""
DUP_MAX = 255
"""RE_DUP_MAX of bionic's regcomp: a larger `{n}` is "invalid repetition count(s)"."""
VALUE_FLAGS = "emABC"
BOOL_FLAGS = set("EFHhilnoqsvwxcLZz")

# bionic (OpenBSD) regerror() texts, keyed by the start of the `regex` package's message.
REGERROR = (
    ("missing )", "parentheses not balanced"),
    ("unbalanced parenthesis", "parentheses not balanced"),
    ("unterminated character set", "brackets ([ ]) not balanced"),
    ("nothing to repeat", "repetition-operator operand invalid"),
    ("multiple repeat", "repetition-operator operand invalid"),
    ("min repeat greater than max repeat", "invalid repetition count(s)"),
    ("bad escape (end of pattern)", "trailing backslash (\\)"),
    ("bad character range", "invalid character range"),
    ("invalid group reference", "invalid backreference number"),
    ("unknown group", "invalid backreference number"),
    ("unknown property", "invalid character class"),
)


class BadRegex(Exception):
    """A pattern that does not compile (or a bad grep option); the message is toybox's text."""


class TooSlow(Exception):
    """Matching ran past MATCH_BUDGET_S."""


def translate(pattern: str, extended: bool) -> str:
    """A POSIX BRE or ERE as a `regex` pattern: BRE's `\\(`, `\\{` become groups and
    intervals and its bare `( ) { } | + ?` are literals; a backslash inside a bracket
    expression is literal in both; intervals over RE_DUP_MAX are refused."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "[":
            i = _bracket(pattern, i, out)
            continue
        if c == "\\":
            if i + 1 >= n:
                raise BadRegex("trailing backslash (\\)")
            nxt = pattern[i + 1]
            if not extended and nxt in "(){}":
                out.append(nxt)
                if nxt == "{":
                    i = _interval(pattern, i + 2, out, "\\}")
                    continue
            else:
                out.append("\\" + nxt)
            i += 2
            continue
        if extended and c == "{" and i + 1 < n and pattern[i + 1].isdigit():
            out.append("{")
            i = _interval(pattern, i + 1, out, "}")
            continue
        if not extended and c in "(){}|+?":
            out.append("\\" + c)
        elif not extended and c == "*" and (not out or out[-1] in ("(", "^")):
            out.append("\\*")  # a leading `*` is literal in a BRE
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _bracket(pattern: str, start: int, out: list[str]) -> int:
    """Copy the bracket expression at `start` (`[^]a\\[:digit:]]`); return the index after it."""
    j, n = start + 1, len(pattern)
    body = []
    if j < n and pattern[j] == "^":
        body.append("^")
        j += 1
    if j < n and pattern[j] == "]":
        body.append("\\]")
        j += 1
    while j < n and pattern[j] != "]":
        if pattern.startswith("[:", j) and (end := pattern.find(":]", j + 2)) > 0:
            body.append(pattern[j : end + 2])
            j = end + 2
        else:
            body.append("\\" + pattern[j] if pattern[j] in "\\[" else pattern[j])
            j += 1
    if j >= n:
        raise BadRegex("brackets ([ ]) not balanced")
    out.append("[" + "".join(body) + "]")
    return j + 1


def _interval(pattern: str, start: int, out: list[str], close: str) -> int:
    """Copy `n`, `n,` or `n,m` and the closing brace; return the index after it."""
    end = pattern.find(close, start)
    if end < 0:
        raise BadRegex("braces not balanced")
    body = pattern[start:end]
    low, _, high = body.partition(",")
    if not low.isdigit() or (high and not high.isdigit()):
        raise BadRegex("invalid repetition count(s)")
    if int(low) > DUP_MAX or (high and (int(high) > DUP_MAX or int(high) < int(low))):
        raise BadRegex("invalid repetition count(s)")
    out.append(body + "}")
    return end + len(close)


def compile_pattern(pattern: str, flags: set[str]) -> "regex.Pattern[str]":
    if "F" in flags:
        source = regex.escape(pattern)
    else:
        source = translate(pattern, "E" in flags or "w" in flags)
    if "w" in flags:
        source = rf"(?<![\w])(?:{source})(?![\w])"
    if "x" in flags:
        source = rf"^(?:{source})$"
    return compile_source(source, "i" in flags)


def compile_source(source: str, icase: bool = False) -> "regex.Pattern[str]":
    """Compile a translated pattern, or raise BadRegex with regerror()'s words."""
    try:
        return regex.compile(source, regex.IGNORECASE if icase else 0)
    except regex.error as exc:
        text = str(exc)
        reason = next((msg for key, msg in REGERROR if text.startswith(key)), "invalid regular expression")
        raise BadRegex(reason) from exc


@dataclass(frozen=True)
class Source:
    name: str
    text: str


def _scan(patterns: list["regex.Pattern[str]"], sources: list[Source], flags: set[str],
          show_names: bool, max_count: int | None) -> tuple[str, bool]:
    """Matching proper, run off the event loop: (output, whether anything matched)."""
    deadline = time.monotonic() + MATCH_BUDGET_S
    out: list[str] = []
    found = False

    def search(line: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        for pat in patterns:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TooSlow
            try:
                if "o" in flags:
                    spans += [m.span() for m in pat.finditer(line, timeout=left, concurrent=True) if m.end() > m.start()]
                elif pat.search(line, timeout=left, concurrent=True) is not None:
                    return [(0, len(line))]
            except TimeoutError as exc:
                raise TooSlow from exc
        return sorted(spans)

    for source in sources:
        prefix = f"{source.name}:" if show_names else ""
        count = 0
        for number, line in enumerate(source.text.splitlines(), 1):
            spans = search(line)
            if bool(spans) == ("v" in flags):
                continue
            count += 1
            found = True
            if "q" in flags:
                return "", True
            if "l" in flags or "L" in flags or "c" in flags:
                if max_count is not None and count >= max_count:
                    break
                continue
            lead = prefix + (f"{number}:" if "n" in flags else "")
            if "o" in flags and "v" not in flags:
                out.extend(f"{lead}{line[a:b]}\n" for a, b in spans)
            else:
                out.append(f"{lead}{line}\n")
            if max_count is not None and count >= max_count:
                break
        if "c" in flags:
            out.append(f"{prefix}{count}\n")
        elif "l" in flags and count:
            out.append(f"{source.name}\n")
        elif "L" in flags and not count:
            out.append(f"{source.name}\n")
    return "".join(out), found


async def grep(ctx: CommandContext, args: list[str], implied: str = "") -> int:
    try:
        opts = parse(args, BOOL_FLAGS, VALUE_FLAGS)
    except UsageError as exc:
        ctx.err(f"grep: {exc}\n")
        return 2
    flags, values, rest = opts.flags | set(implied), opts.values, opts.operands
    pattern_texts = [line for e in values.get("e", []) for line in e.split("\n")]
    if not pattern_texts:
        if not rest:
            ctx.err("grep: no REGEX\n")
            return 2
        pattern_texts = rest.pop(0).split("\n")
    try:
        max_count = int(values["m"][-1]) if "m" in values else None
    except ValueError:
        ctx.err(f"grep: -m: not integer: {values['m'][-1]}\n")
        return 2
    patterns = []
    for text in pattern_texts:
        try:
            patterns.append(compile_pattern(text, flags))
        except BadRegex as exc:
            ctx.err(f"grep: bad regex '{text}': {exc}\n")
            return 2
    sources: list[Source] = []
    missing = False
    for name in rest or ["-"]:
        if name == "-":
            sources.append(Source("(standard input)", ctx.stdin.decode("utf-8", "replace")))
            continue
        try:
            sources.append(Source(name, ctx.system.fs.read(abspath(name)).decode("utf-8", "replace")))
        except FsError as exc:
            missing = True
            if "s" not in flags:
                ctx.err(f"grep: {name}: {exc.args[0]}\n")
    show_names = ("H" in flags or len(rest) > 1) and "h" not in flags
    try:
        out, found = await asyncio.to_thread(_scan, patterns, sources, flags, show_names, max_count)
    except TooSlow:
        shown = "' '".join(pattern_texts)
        ctx.err(f"grep: regex '{shown}': too slow to match, gave up after {MATCH_BUDGET_S:g}s\n")
        return 2
    ctx.out(out)
    if "q" in flags and found:
        return 0
    if missing:
        return 2
    return 0 if found else 1


def egrep(ctx: CommandContext, args: list[str]) -> Awaitable[int]:
    return grep(ctx, args, implied="E")


def fgrep(ctx: CommandContext, args: list[str]) -> Awaitable[int]:
    return grep(ctx, args, implied="F")


COMMANDS: dict[str, Command] = {"grep": grep, "egrep": egrep, "fgrep": fgrep}
