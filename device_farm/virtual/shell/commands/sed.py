"""toybox `sed`, the part scripts use: `s/RE/REPL/[gpNI]` with any delimiter, `d`, `p`, `q`,
`y/SRC/DST/`, `=`, addresses (`N`, `$`, `/RE/`, `A,B` ranges, `!`), several commands by `;`, `-e` or
lines, `-n`, `-E`/`-r` and `-i`. Regexes are grep's (POSIX BRE or ERE) under the same time
budget, run off the event loop; errors use toybox's words (`sed: bad pattern 'k'@1 (k)`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import regex

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.commands.grep import MATCH_BUDGET_S, BadRegex, TooSlow, compile_source, translate
from device_farm.virtual.shell.commands.toyargs import UsageError, inputs, parse
from device_farm.virtual.shell.commands.toybox import abspath
from device_farm.virtual.shell.session import CommandContext

@dataclass
class SedCommand:
    name: str
    first: object = None
    """None (every line), a line number, "$" or a compiled regex; so is `last`."""
    last: object = None
    negate: bool = False
    pattern: "regex.Pattern[str] | None" = None
    replacement: str = ""
    count: int = 1  # 0: every match (g)
    print_: bool = False
    in_range: bool = False
    table: "dict[int, str] | None" = None
    """`y`: each character of SRC to the one at its place in DST."""


class ScriptError(UsageError):
    """The script does not parse; the message is toybox's."""


class _Reader:
    def __init__(self, text: str, extended: bool) -> None:
        self.text, self.i, self.extended = text, 0, extended

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def bad(self) -> ScriptError:
        shown = self.peek() or " "
        return ScriptError(f"bad pattern '{self.text}'@{self.i + 1} ({shown})")

    def delimited(self, delim: str) -> str:
        """Text up to an unescaped `delim` (consumed); `\\delim` stands for the delimiter."""
        out: list[str] = []
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "\\" and self.i + 1 < len(self.text):
                nxt = self.text[self.i + 1]
                out.append(nxt if nxt == delim else "\\" + nxt)
                self.i += 2
            elif c == delim:
                self.i += 1
                return "".join(out)
            else:
                out.append(c)
                self.i += 1
        raise ScriptError(f"unmatched '{delim}'")

    def regex(self, delim: str, icase: bool = False) -> "regex.Pattern[str]":
        raw = self.delimited(delim)
        try:
            return compile_source(translate(raw, self.extended), icase)
        except BadRegex as exc:
            raise ScriptError(f"bad regex '{raw}': {exc}") from exc

    def address(self) -> object:
        c = self.peek()
        if c.isdigit():
            start = self.i
            while self.peek().isdigit():
                self.i += 1
            return int(self.text[start : self.i])
        if c == "$":
            self.i += 1
            return "$"
        if c == "/" or c == "\\":
            self.i += 1
            if c == "\\":
                c = self.peek()
                self.i += 1
            return self.regex(c)
        return None


def parse_script(text: str, extended: bool) -> list[SedCommand]:
    commands: list[SedCommand] = []
    for line in text.split("\n"):
        r = _Reader(line, extended)
        while True:
            while r.peek() in (" ", "\t", ";"):
                r.i += 1
            if not r.peek():
                break
            cmd = SedCommand("")
            cmd.first = r.address()
            if cmd.first is not None and r.peek() == ",":
                r.i += 1
                cmd.last = r.address()
                if cmd.last is None:
                    raise r.bad()
            while r.peek() == " ":
                r.i += 1
            if r.peek() == "!":
                cmd.negate = True
                r.i += 1
            cmd.name = r.peek()
            r.i += 1
            if cmd.name == "s":
                delim = r.peek()
                if not delim or delim in "\\\n":
                    raise r.bad()
                r.i += 1
                raw = r.delimited(delim)
                cmd.replacement = r.delimited(delim)
                flags = ""
                while r.peek() and r.peek() in "gpiI0123456789":
                    flags += r.peek()
                    r.i += 1
                cmd.count = 0 if "g" in flags else int("".join(c for c in flags if c.isdigit()) or 1)
                cmd.print_ = "p" in flags
                try:
                    cmd.pattern = compile_source(translate(raw, extended), "i" in flags or "I" in flags)
                except BadRegex as exc:
                    raise ScriptError(f"bad regex '{raw}': {exc}") from exc
                groups = [int(g) for g in regex.findall(r"\\(\d)", cmd.replacement)]
                if groups and max(groups) > cmd.pattern.groups:
                    raise ScriptError(f"no s//\\{max(groups)}/")
            elif cmd.name == "y":
                delim = r.peek()
                if not delim or delim in "\\\n":
                    raise r.bad()
                r.i += 1
                source, dest = _literal(r.delimited(delim)), _literal(r.delimited(delim))
                if len(source) != len(dest):
                    raise r.bad()
                cmd.table = {ord(a): b for a, b in reversed(list(zip(source, dest)))}  # the first wins
            elif cmd.name not in ("d", "p", "q", "="):
                r.i -= 1
                raise r.bad()
            while r.peek() == " ":
                r.i += 1
            if r.peek() not in ("", ";", "}"):
                raise r.bad()
            commands.append(cmd)
    return commands


def _literal(text: str) -> str:
    """`y`'s strings: `\\n` is a newline and `\\\\` a backslash (the delimiter is already in)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"n": "\n", "t": "\t"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _expand(replacement: str, match: "regex.Match[str]") -> str:
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "&":
            out.append(match.group(0))
        elif c == "\\" and i + 1 < len(replacement):
            nxt = replacement[i + 1]
            i += 1
            if nxt.isdigit():
                out.append(match.group(int(nxt)) or "")
            else:
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Run:
    """One pass of the script over the input lines (in a worker thread)."""

    def __init__(self, commands: list[SedCommand], quiet: bool) -> None:
        self.commands, self.quiet = commands, quiet
        self.deadline = time.monotonic() + MATCH_BUDGET_S

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TooSlow
        return left

    def hits(self, address: object, number: int, is_last: bool, line: str) -> bool:
        if isinstance(address, int):
            return number == address
        if address == "$":
            return is_last
        assert isinstance(address, regex.Pattern)
        try:
            return address.search(line, timeout=self.left(), concurrent=True) is not None
        except TimeoutError as exc:
            raise TooSlow from exc

    def selected(self, cmd: SedCommand, number: int, is_last: bool, line: str) -> bool:
        if cmd.first is None:
            chosen = True
        elif cmd.last is None:
            chosen = self.hits(cmd.first, number, is_last, line)
        elif cmd.in_range:
            chosen = True
            ended = (isinstance(cmd.last, int) and number >= cmd.last) or self.hits(cmd.last, number, is_last, line)
            cmd.in_range = not ended
        elif self.hits(cmd.first, number, is_last, line):
            chosen = True
            cmd.in_range = not (isinstance(cmd.last, int) and number >= cmd.last)
        else:
            chosen = False
        return chosen != cmd.negate

    def substitute(self, cmd: SedCommand, line: str) -> tuple[str, bool]:
        assert cmd.pattern is not None
        seen = 0
        done = False

        def replace(m: "regex.Match[str]") -> str:
            nonlocal seen, done
            seen += 1
            if cmd.count and seen != cmd.count:
                return m.group(0)
            done = True
            return _expand(cmd.replacement, m)

        try:
            result = cmd.pattern.sub(replace, line, count=1 if cmd.count == 1 else 0,
                                     timeout=self.left(), concurrent=True)
        except TimeoutError as exc:
            raise TooSlow from exc
        return result, done

    def run(self, lines: list[tuple[str, bool]]) -> tuple[str, bool]:
        """(output, whether a `q` ended it)."""
        out: list[str] = []
        for number, (line, newline) in enumerate(lines, 1):
            is_last = number == len(lines)
            end = "\n" if newline or not is_last else ""
            deleted = quit_ = False
            for cmd in self.commands:
                if not self.selected(cmd, number, is_last, line):
                    continue
                if cmd.name == "s":
                    line, done = self.substitute(cmd, line)
                    if done and cmd.print_:
                        out.append(line + end)
                elif cmd.name == "y":
                    assert cmd.table is not None
                    line = line.translate(cmd.table)
                elif cmd.name == "p":
                    out.append(line + end)
                elif cmd.name == "=":
                    out.append(f"{number}\n")
                elif cmd.name == "d":
                    deleted = True
                    break
                elif cmd.name == "q":
                    quit_ = True
                    break
            if not deleted and not self.quiet:
                out.append(line + end)
            if quit_:
                return "".join(out), True
        return "".join(out), False


async def sed(ctx: CommandContext, args: list[str]) -> int:
    # -i takes its backup suffix only when joined (`-i.bak`), so it is taken out first.
    in_place = any(a.startswith("-i") for a in args)
    args = [a for a in args if not a.startswith("-i")]
    try:
        opts = parse(args, "nErzs", "ef")
        scripts = list(opts.values.get("e", []))
        operands = list(opts.operands)
        if not scripts:
            if not operands:
                raise UsageError("no pattern")
            scripts = [operands.pop(0)]
        commands = parse_script("\n".join(scripts), bool(opts.flags & {"E", "r"}))
    except UsageError as exc:
        ctx.err(f"sed: {exc}\n")
        return 1
    if in_place and not operands:
        ctx.err("sed: -i on stdin\n")
        return 1
    files, status = inputs(ctx, "sed", operands)
    groups = [[name for name, _ in files]] if not in_place else [[name] for name, _ in files]
    contents = dict(files)
    for names in groups:
        data = b"".join(contents[n] for n in names).decode("utf-8", "replace")
        lines = [(line.rstrip("\n"), line.endswith("\n")) for line in data.splitlines(keepends=True)]
        runner = _Run(commands, "n" in opts.flags)
        try:
            output, _ = await asyncio.to_thread(runner.run, lines)
        except TooSlow:
            ctx.err(f"sed: regex too slow to match, gave up after {MATCH_BUDGET_S:g}s\n")
            return 1
        if in_place:
            try:
                ctx.system.fs.write(abspath(names[0]), output.encode())
            except FsError as exc:
                ctx.err(f"sed: {names[0]}: {exc.args[0]}\n")
                status = 1
        else:
            ctx.out(output)
    return status


COMMANDS = {"sed": sed}
