"""The `shell:`, `shell,v2,...:` and `exec:` services: run command lines on a stream.

v1 and exec send raw output and close at the end (exit status is lost, as on Android).
A line whose command reads stdin (`cat > f`, `md5sum`) gets the host's input up to its end
(adb exec-in, or v2 close-stdin).
v2 frames every message as `id u8, length u32le, data`: stdout 1, stderr 2, exit 3 from
the device; stdin 0, close-stdin 4 and window-size 5 from the host (adb's shell_protocol.h).
With `pty` the output is merged and NL becomes CRNL. An empty command reads command lines
from stdin; with a pty its line discipline also echoes input, turns CR into NL and prompts.
Without one it is a script (`adb shell < script`, and how hosts send commands too long for a
service name): a newline inside quotes continues the command, as sh reads it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from device_farm.virtual.adbd.stream import AdbStream, StreamClosed
from device_farm.virtual.shell.session import Command, CommandContext, ShellSession

if TYPE_CHECKING:
    from device_farm.virtual.os.system import AndroidSystem

ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN, ID_WINDOW = 0, 1, 2, 3, 4, 5
_V2_HEADER = struct.Struct("<BI")
MAX_V2_PACKET = 1024 * 1024
MAX_STDIN = 64 * 1024 * 1024
_UNQUOTED_SPECIAL = re.compile(rb"['\"\\\n#]")
_DOUBLE_QUOTED_SPECIAL = re.compile(rb'["\\]')
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShellSpec:
    """What the host asked for: `shell,v2,TERM=xterm,raw:ls` -> v2, not pty, 'ls'."""

    command: str
    v2: bool
    pty: bool

    @classmethod
    def parse(cls, service: str) -> "ShellSpec":
        if service.startswith("exec:"):
            return cls(service[len("exec:") :], v2=False, pty=False)
        head, _, command = service.partition(":")
        args = head.split(",")[1:]
        pty = "pty" in args or ("raw" not in args and not command.strip())
        return cls(command, v2="v2" in args, pty=pty)


class ShellChannel:
    """Writes shell output on a stream in v1/raw or v2 framing, with pty translation."""

    def __init__(self, stream: AdbStream, spec: ShellSpec) -> None:
        self._stream = stream
        self._spec = spec

    async def send(self, data: bytes, ident: int = ID_STDOUT) -> None:
        if not data:
            return
        if self._spec.pty:
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            ident = ID_STDOUT
        if self._spec.v2:
            data = _V2_HEADER.pack(ident, len(data)) + data
        await self._stream.write(data)

    async def exit(self, status: int) -> None:
        if self._spec.v2:
            await self._stream.write(_V2_HEADER.pack(ID_EXIT, 1) + bytes([status & 0xFF]))

    async def read_input(self) -> bytes:
        """Next stdin bytes from the host; b"" at close-stdin or end of stream."""
        while True:
            if not self._spec.v2:
                return await self._stream.read()
            ident, length = _V2_HEADER.unpack(await self._stream.read_exactly(5))
            if length > MAX_V2_PACKET:
                logger.warning("shell v2: closing stream on a %d-byte packet", length)
                raise StreamClosed("oversized shell v2 packet")
            data = await self._stream.read_exactly(length) if length else b""
            if ident == ID_STDIN:
                if data:
                    return data
            elif ident == ID_CLOSE_STDIN:
                return b""


class ShellService:
    """One shell stream."""

    def __init__(self, system: "AndroidSystem", commands: dict[str, Command], spec: ShellSpec) -> None:
        self._session = ShellSession(system, commands, {"TERM": "xterm-256color"} if spec.pty else None)
        self._system = system
        self._spec = spec

    async def serve(self, stream: AdbStream) -> None:
        channel = ShellChannel(stream, self._spec)
        if not self._spec.command.strip():
            status = await (self._interactive(channel) if self._spec.pty else self._script(channel))
        elif not self._spec.pty and self._session.reads_stdin(self._spec.command):
            status = await self._run_with_input(channel, stream)
        else:
            status = await self._run_once(channel, stream)
        await channel.exit(status)

    def _context(self, channel: ShellChannel, stdin: bytes = b"",
                 stream: AdbStream | None = None) -> CommandContext:
        """With `stream`, output is dropped once the host has closed it (exec-in)."""
        ctx = CommandContext(self._system, self._session.env, stdin)

        async def flush() -> None:
            out, err = bytes(ctx.stdout), bytes(ctx.stderr)
            ctx.stdout.clear()
            ctx.stderr.clear()
            if stream is not None and stream.closed:
                return
            await channel.send(out, ID_STDOUT)
            await channel.send(err, ID_STDERR)

        ctx.flush = flush
        return ctx

    async def _run_once(self, channel: ShellChannel, stream: AdbStream) -> int:
        ctx = self._context(channel)
        job = asyncio.ensure_future(self._session.run(self._spec.command, ctx))
        watcher = asyncio.ensure_future(self._watch_host(channel, stream))
        try:
            await asyncio.wait({job, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if not job.done():  # the host closed the stream: stop the command
                job.cancel()
                await asyncio.gather(job, return_exceptions=True)
                raise StreamClosed("host closed the shell stream")
            status = job.result()
        finally:
            watcher.cancel()
            job.cancel()  # no-op once it finished; stops it when this task is cancelled
            await asyncio.gather(watcher, job, return_exceptions=True)
        assert ctx.flush is not None
        await ctx.flush()
        return status

    async def _run_with_input(self, channel: ShellChannel, stream: AdbStream) -> int:
        """`exec:cat > /sdcard/f` (adb exec-in), `shell,v2:md5sum`: the host's input up to
        close-stdin or the end of the stream is the command's stdin. The command runs even
        when the host closed the stream, as a process reading a socket would."""
        data = bytearray()
        try:
            while len(data) <= MAX_STDIN and (chunk := await channel.read_input()):
                data += chunk
        except StreamClosed:
            pass  # exec-in ends its input by closing the stream
        if len(data) > MAX_STDIN:
            logger.warning("shell: closing the stream after %d bytes of stdin", len(data))
            raise StreamClosed("stdin too large")
        status = await self._run_line(channel, self._spec.command, bytes(data), stream)
        if stream.closed:
            raise StreamClosed("host closed the stream after sending its input")
        return status

    @staticmethod
    async def _watch_host(channel: ShellChannel, stream: AdbStream) -> None:
        """Consume (and ignore) host input; return when the stream closes."""
        try:
            while await channel.read_input():
                pass
            await stream.wait_closed()
        except StreamClosed:
            return

    async def _run_line(self, channel: ShellChannel, text: str, stdin: bytes = b"",
                        stream: AdbStream | None = None) -> int:
        """Run `text` on `stdin` to its end and send its output (dropped, with `stream`, once
        the host has closed that stream)."""
        ctx = self._context(channel, stdin, stream)
        status = await self._session.run(text, ctx)
        assert ctx.flush is not None
        await ctx.flush()
        return status

    def _prompt(self) -> bytes:
        return f"{self._system.props.get('ro.product.device', 'generic')}:/ $ ".encode()

    async def _script(self, channel: ShellChannel) -> int:
        """Run the commands read from stdin, each once it is complete; a last one without its
        newline runs at the end of the input."""
        reader = ScriptReader()
        status = 0
        while True:
            try:
                data = await channel.read_input()
            except StreamClosed:
                return status
            commands = reader.feed(data) if data else reader.finish()
            if reader.pending > MAX_STDIN:
                logger.warning("shell: closing the stream on a %d-byte unfinished command", reader.pending)
                raise StreamClosed("command too large")
            for text in commands:
                status = await self._run_line(channel, text)
                if self._session.exited:
                    return status
            if not data:
                return status

    async def _interactive(self, channel: ShellChannel) -> int:
        """Read command lines from a pty: echo them and print prompts."""
        send = channel.send
        await send(self._prompt())
        line = bytearray()
        status = 0
        while True:
            try:
                data = await channel.read_input()
            except StreamClosed:
                return status
            if not data:
                return status
            for byte in data:
                if byte in (0x0D, 0x0A):
                    await send(b"\n")
                    text = line.decode("utf-8", "replace").strip()
                    line.clear()
                    if text:
                        status = await self._run_line(channel, text)
                        if self._session.exited:
                            return status
                    await send(self._prompt())
                elif byte == 0x04 and not line:
                    return status
                elif byte == 0x03:
                    line.clear()
                    await send(b"^C\n" + self._prompt())
                elif byte in (0x7F, 0x08):
                    if line:
                        line.pop()
                        await send(b"\b \b")
                elif byte >= 0x20 or byte == 0x09:
                    line.append(byte)
                    await send(bytes([byte]))


class ScriptReader:
    """Splits a shell script arriving in pieces into complete commands: a newline ends one only
    outside quotes, a backslash escapes the next byte, a comment runs to the end of its line.
    Each byte is scanned once, so a megabyte-long quoted argument costs a few regex jumps."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # how far the buffer has been scanned
        self._quote = b""  # b"'" or b'"' while inside quotes

    @property
    def pending(self) -> int:
        """Bytes of a command not complete yet."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[str]:
        self._buf += data
        commands: list[str] = []
        buf = self._buf
        while self._pos < len(buf):
            if self._quote == b"'":
                close = buf.find(b"'", self._pos)
                if close < 0:
                    self._pos = len(buf)
                    break
                self._pos, self._quote = close + 1, b""
                continue
            pattern = _DOUBLE_QUOTED_SPECIAL if self._quote else _UNQUOTED_SPECIAL
            match = pattern.search(buf, self._pos)
            if match is None:
                self._pos = len(buf)
                break
            at, char = match.start(), buf[match.start() : match.start() + 1]
            if char == b"\\":
                if at + 1 >= len(buf):  # the escaped byte has not arrived yet
                    self._pos = at
                    break
                self._pos = at + 2
            elif char in (b"'", b'"'):
                self._quote = b"" if self._quote else char
                self._pos = at + 1
            elif char == b"#":
                starts_word = at == 0 or buf[at - 1 : at] in (b" ", b"\t", b"\n", b";", b"&", b"|")
                end = buf.find(b"\n", at) if starts_word else at
                if end < 0:
                    self._pos = at  # the comment's end has not arrived yet
                    break
                self._pos = end if starts_word else at + 1
            else:  # a newline outside quotes: one command is complete
                commands.append(self._take(at))
        return [c for c in commands if c]

    def finish(self) -> list[str]:
        """The input ended: what is left is the last command (a syntax error if a quote is open)."""
        text = self._take(len(self._buf))
        return [text] if text else []

    def _take(self, end: int) -> str:
        text = self._buf[:end].decode("utf-8", "replace").strip()
        del self._buf[: end + 1]
        self._pos = 0
        return text
