"""A small toybox/mksh-like shell: the interpreter behind `shell:` and `exec:`.

Runs what `shell.syntax` parses: lists joined by `;`/`&&`/`||`, pipelines, `NAME=value`
prefixes, redirections and `exit`, keeping `$?` between commands. Commands are looked up by
basename in a registry (name -> callable); an unknown one prints mksh's
`inaccessible or not found` and exits 127.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable, Union

from device_farm.virtual.os.fs import FsError
from device_farm.virtual.shell.syntax import CommandList, Pipeline, ShellSyntaxError, SimpleCommand, parse

if TYPE_CHECKING:
    from device_farm.virtual.os.system import AndroidSystem

SHELL_PATH = "/system/bin/sh"
STDIN_OPERANDS = {"cat": 0, "md5sum": 0, "grep": 1, "egrep": 1, "fgrep": 1, "sh": 0, "head": 0,
                  "tail": 0, "wc": 0, "sort": 0, "uniq": 0, "cut": 0, "tr": 2, "sed": 1}
"""Commands that read stdin when given at most this many operands (`cat`, `grep PATTERN`)."""


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
    shell: "ShellSession | None" = None
    """The session running the command (what `sh` starts a child of)."""

    def out(self, text: str) -> None:
        self.stdout += text.encode()

    def err(self, text: str) -> None:
        self.stderr += text.encode()


Command = Callable[[CommandContext, list[str]], Union[int, Awaitable[int]]]


class ShellSession:
    """Runs command lines with a persistent environment and last exit status."""

    def __init__(self, system: "AndroidSystem", commands: dict[str, Command],
                 env: dict[str, str] | None = None, depth: int = 0) -> None:
        self.system = system
        self.commands = commands
        self.depth = depth
        """How many `sh` levels this session runs under (bounded, as a phone's process table is)."""
        self.env: dict[str, str] = {"PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin",
                                    "HOME": "/", "SHELL": SHELL_PATH, "USER": "shell", "?": "0"}
        self.env.update(env or {})
        self.exited = False

    def reads_stdin(self, line: str) -> bool:
        """Whether the line's first command of some pipeline reads stdin (`cat > f`), so the
        service must collect the host's input up to its end before running it."""
        try:
            program = parse(line)
        except ShellSyntaxError:
            return False
        for _connector, pipeline in program:
            first = pipeline[0] if pipeline else None
            if first is None or not first.words or any(op == "<" for op, _ in first.redirects):
                continue
            try:
                argv = [w.expand(self.env) for w in first.words]
            except ShellSyntaxError:
                continue  # the run reports it
            name = argv[0].rsplit("/", 1)[-1]
            limit = STDIN_OPERANDS.get(name)
            if name == "sh" and any(a.startswith("-") and "c" in a for a in argv[1:]):
                continue  # `sh -c SCRIPT` takes its script from the argument
            if limit is not None and sum(1 for a in argv[1:] if not a.startswith("-")) <= limit:
                return True
        return False

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
        except ShellSyntaxError as exc:  # a word that cannot expand ($((1/0))) stops the line
            ctx_out.err(f"{SHELL_PATH}: {exc}\n")
            status = 1
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
            ctx = CommandContext(self.system, self.env, stdin, flush=ctx_out.flush if last else None, shell=self)
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
