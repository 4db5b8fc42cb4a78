"""A small toybox/mksh-like shell: the parser and interpreter behind `shell:` and `exec:`.

Supports `;`, `&&`, `||`, `|`, `$?`, `$VAR`/`${VAR}`, single and double quotes, backslash
escapes, `NAME=value` prefixes and the redirections `>`, `>>`, `2>`, `2>&1`, `<`. Commands
are looked up by basename in a registry (name -> callable); an unknown one prints mksh's
`inaccessible or not found` and exits 127.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable, Union

from device_farm.virtual.fs import FsError

if TYPE_CHECKING:
    from device_farm.virtual.system import AndroidSystem

SHELL_PATH = "/system/bin/sh"
OPERATORS = ("&&", "||", ">>", "2>&1", "2>", ";", "|", ">", "<", "&")


class ShellSyntaxError(ValueError):
    """The command line does not parse."""


class ShellExit(Exception):
    """`exit [n]`: stop the line (and an interactive session) with status n."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass
class CommandContext:
    """What a command sees: the phone, its environment and its three byte streams."""

    system: "AndroidSystem"
    env: dict[str, str]
    stdin: bytes
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    flush: Callable[[], Awaitable[None]] | None = None

    def out(self, text: str) -> None:
        self.stdout += text.encode()

    def err(self, text: str) -> None:
        self.stderr += text.encode()


Command = Callable[[CommandContext, list[str]], Union[int, Awaitable[int]]]


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Word:
    parts: tuple[Union[str, Var], ...]

    def expand(self, env: dict[str, str]) -> str:
        return "".join(p if isinstance(p, str) else env.get(p.name, "") for p in self.parts)


@dataclass
class SimpleCommand:
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word | None]] = field(default_factory=list)


Pipeline = list[SimpleCommand]
CommandList = list[tuple[str, Pipeline]]  # (connector before it: ";", "&&", "||"), pipeline


def tokenize(line: str) -> list[Union[Word, str]]:
    """Split a command line into Words and operator strings."""
    tokens: list[Union[Word, str]] = []
    parts: list[Union[str, Var]] = []
    buf: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def flush_buf() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    def end_word() -> None:
        nonlocal in_word
        flush_buf()
        if in_word:
            tokens.append(Word(tuple(parts)))
        parts.clear()
        in_word = False

    def read_var(j: int) -> tuple[Var | None, int]:
        if j < n and line[j] == "{":
            close = line.find("}", j)
            if close < 0:
                raise ShellSyntaxError("bad substitution")
            return Var(line[j + 1 : close]), close + 1
        if j < n and line[j] in "?$#!0123456789":
            return Var(line[j]), j + 1
        k = j
        while k < n and (line[k].isalnum() or line[k] == "_"):
            k += 1
        return (Var(line[j:k]), k) if k > j else (None, j)

    while i < n:
        c = line[i]
        if c in " \t\n":
            end_word()
            i += 1
        elif c == "#" and not in_word:
            break
        elif c == "\\":
            in_word = True
            if i + 1 < n:
                buf.append(line[i + 1])
            i += 2
        elif c == "'":
            in_word = True
            close = line.find("'", i + 1)
            if close < 0:
                raise ShellSyntaxError("unterminated single quote")
            buf.append(line[i + 1 : close])
            i = close + 1
        elif c == '"':
            in_word = True
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    buf.append(line[i + 1])
                    i += 2
                elif line[i] == "$":
                    var, j = read_var(i + 1)
                    if var is None:
                        buf.append("$")
                        i += 1
                    else:
                        flush_buf()
                        parts.append(var)
                        i = j
                else:
                    buf.append(line[i])
                    i += 1
            if i >= n:
                raise ShellSyntaxError("unterminated double quote")
            i += 1
        elif c == "$":
            in_word = True
            var, j = read_var(i + 1)
            if var is None:
                buf.append("$")
                i += 1
            else:
                flush_buf()
                parts.append(var)
                i = j
        else:
            op = next((o for o in OPERATORS if line.startswith(o, i)), None)
            if op is not None and op.startswith("2") and (in_word or (i > 0 and line[i - 1] not in " \t")):
                op = None
            if op is not None:
                end_word()
                tokens.append(op)
                i += len(op)
            else:
                in_word = True
                buf.append(c)
                i += 1
    end_word()
    return tokens


def parse(line: str) -> CommandList:
    """Parse into pipelines joined by ;, && and ||."""
    result: CommandList = []
    connector = ";"
    pipeline: Pipeline = []
    cmd = SimpleCommand()
    tokens = tokenize(line)
    i = 0

    def finish_command() -> None:
        nonlocal cmd
        if not cmd.words and not cmd.assignments and not cmd.redirects:
            raise ShellSyntaxError("syntax error: unexpected operator")
        pipeline.append(cmd)
        cmd = SimpleCommand()

    while i < len(tokens):
        tok = tokens[i]
        if isinstance(tok, Word):
            text = tok.parts[0] if tok.parts and isinstance(tok.parts[0], str) else ""
            name, eq, _ = text.partition("=")
            if not cmd.words and eq and name.isidentifier():
                rest = (text[len(name) + 1 :],) + tok.parts[1:]
                cmd.assignments.append((name, Word(tuple(p for p in rest if p != ""))))
            else:
                cmd.words.append(tok)
        elif tok in (">", ">>", "2>", "<"):
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if not isinstance(target, Word):
                raise ShellSyntaxError(f"syntax error: '{tok}' needs a file")
            cmd.redirects.append((tok, target))
            i += 1
        elif tok == "2>&1":
            cmd.redirects.append((tok, None))
        elif tok == "|":
            finish_command()
        elif tok in (";", "&&", "||", "&"):
            if not cmd.words and not cmd.assignments and not pipeline and tok in (";", "&"):
                i += 1
                continue
            finish_command()
            result.append((connector, pipeline))
            pipeline = []
            connector = ";" if tok == "&" else tok
        i += 1
    if cmd.words or cmd.assignments or cmd.redirects:
        finish_command()
    if pipeline:
        result.append((connector, pipeline))
    elif connector in ("&&", "||"):
        raise ShellSyntaxError(f"syntax error: unexpected end after '{connector}'")
    return result


class ShellSession:
    """Runs command lines with a persistent environment and last exit status."""

    def __init__(self, system: "AndroidSystem", commands: dict[str, Command],
                 env: dict[str, str] | None = None) -> None:
        self.system = system
        self.commands = commands
        self.env: dict[str, str] = {"PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin",
                                    "HOME": "/", "SHELL": SHELL_PATH, "USER": "shell", "?": "0"}
        self.env.update(env or {})
        self.exited = False

    async def run(self, line: str, ctx_out: CommandContext) -> int:
        """Run a line; its output is appended to ctx_out.stdout/stderr. Returns the status."""
        try:
            program = parse(line)
        except ShellSyntaxError as exc:
            ctx_out.err(f"{SHELL_PATH}: {exc}\n")
            self.env["?"] = "1"
            return 1
        status = int(self.env["?"])
        try:
            status = await self._program(program, ctx_out, status)
        except ShellExit as done:
            self.exited = True
            status = done.status
            if ctx_out.flush is not None:
                await ctx_out.flush()
        self.env["?"] = str(status)
        return status

    async def _program(self, program: CommandList, ctx_out: CommandContext, status: int) -> int:
        for connector, pipeline in program:
            if connector == "&&" and status != 0:
                continue
            if connector == "||" and status == 0:
                continue
            status = await self._pipeline(pipeline, ctx_out)
            self.env["?"] = str(status)
            if ctx_out.flush is not None:  # keeps stdout and stderr in order on merged streams
                await ctx_out.flush()
        return status

    async def _pipeline(self, pipeline: Pipeline, ctx_out: CommandContext) -> int:
        stdin = ctx_out.stdin
        status = 0
        for index, cmd in enumerate(pipeline):
            last = index == len(pipeline) - 1
            ctx = CommandContext(self.system, self.env, stdin, flush=ctx_out.flush if last else None)
            status = await self._simple(cmd, ctx)
            ctx_out.stderr += ctx.stderr
            if last:
                ctx_out.stdout += ctx.stdout
            stdin = bytes(ctx.stdout)
        return status

    async def _simple(self, cmd: SimpleCommand, ctx: CommandContext) -> int:
        assigned = {name: word.expand(self.env) for name, word in cmd.assignments}
        if not cmd.words:
            self.env.update(assigned)
            return 0
        argv = [w.expand(self.env) for w in cmd.words]
        ctx.env = {**self.env, **assigned}
        fs = self.system.fs
        stdout_file: tuple[str, bool] | None = None
        stderr_target: str | None = None
        for op, word in cmd.redirects:
            target = word.expand(self.env) if word is not None else ""
            if op == "<":
                try:
                    ctx.stdin = fs.read(target)
                except FsError as exc:
                    ctx.err(f"{SHELL_PATH}: can't open {target}: {exc.args[0]}\n")
                    return 1
            elif op in (">", ">>"):
                stdout_file = (target, op == ">>")
            elif op == "2>":
                stderr_target = target
            elif op == "2>&1":
                stderr_target = "&1"
        name = argv[0].rsplit("/", 1)[-1]
        if name == "exit":
            raise ShellExit(int(argv[1]) & 0xFF if len(argv) > 1 and argv[1].isdigit() else int(self.env["?"]))
        command = self.commands.get(name)
        if command is None:
            ctx.err(f"{SHELL_PATH}: {argv[0]}: inaccessible or not found\n")
            status = 127
        else:
            result = command(ctx, argv[1:])
            status = await result if inspect.isawaitable(result) else result
        if stderr_target == "&1":
            ctx.stdout += ctx.stderr
            ctx.stderr.clear()
        elif stderr_target is not None:
            if stderr_target != "/dev/null":
                self._write_file(ctx, stderr_target, bytes(ctx.stderr), False)
            ctx.stderr.clear()
        if stdout_file is not None:
            path, append = stdout_file
            if path != "/dev/null":
                if not self._write_file(ctx, path, bytes(ctx.stdout), append):
                    status = 1
            ctx.stdout.clear()
        return status

    @staticmethod
    def _write_file(ctx: CommandContext, path: str, data: bytes, append: bool) -> bool:
        try:
            ctx.system.fs.write(path, data, append=append)
            return True
        except FsError as exc:
            ctx.err(f"{SHELL_PATH}: can't create {path}: {exc.args[0]}\n")
            return False
