"""The `sync:` service: adb's file protocol (stat, list, push, pull) over one stream.

Requests are `ID + u32 length + payload` and arrive split across WRTE packets at any
boundary, so the parser reads exact byte counts from the stream. Supported: STAT, LST2/STA2,
LIST, LIS2, SEND (`path,<decimal mode>`, parents created as with fixed_push_mkdir), RECV
(DATA chunks of at most 64 KiB, then DONE), QUIT. Failures answer FAIL + message and end
the session, as adbd does.
"""

from __future__ import annotations

import logging
import stat as statmod
import struct

from device_farm.virtual.adbd.stream import AdbStream
from device_farm.virtual.os.fs import FileSystem, FsError, Node, split_path

logger = logging.getLogger(__name__)

SYNC_DATA_MAX = 64 * 1024
_REQ = struct.Struct("<4sI")
_STAT_V1 = struct.Struct("<4sIII")
_STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")
_DENT_V1 = struct.Struct("<4sIIII")
_DENT_V2 = struct.Struct("<4sIQQIIIIQqqqI")
_ENOENT = 2
_MAX_PATH = 1024


class SyncFailure(Exception):
    """Reported to the host as FAIL + message, then the session ends."""


class SyncSession:
    """Serves one `sync:` stream against a file system."""

    def __init__(self, fs: FileSystem, stream: AdbStream) -> None:
        self._fs = fs
        self._stream = stream

    async def serve(self) -> None:
        while True:
            ident, length = _REQ.unpack(await self._stream.read_exactly(8))
            if ident in (b"QUIT",):
                return
            if length > _MAX_PATH:
                logger.warning("sync: closing stream on a %d-byte path", length)
                await self._fail(f"path too long: {length}")
                return
            arg = (await self._stream.read_exactly(length)).decode("utf-8", "replace")
            try:
                await self._handle(ident, arg)
            except SyncFailure as exc:
                logger.info("sync %s %r failed: %s", ident.decode("ascii", "replace"), arg, exc)
                await self._fail(str(exc))
                return

    async def _fail(self, message: str) -> None:
        data = message.encode()
        await self._stream.write(b"FAIL" + struct.pack("<I", len(data)) + data)

    def _lookup(self, path: str) -> Node | None:
        try:
            return self._fs.lookup(path)
        except FsError as exc:
            raise SyncFailure(f"{path}: {exc.args[0]}") from exc

    async def _handle(self, ident: bytes, arg: str) -> None:
        if ident == b"STAT":
            node = self._lookup(arg)
            if node is None:
                await self._stream.write(_STAT_V1.pack(b"STAT", 0, 0, 0))
            else:
                await self._stream.write(_STAT_V1.pack(b"STAT", node.mode, node.size, node.mtime))
        elif ident in (b"STA2", b"LST2"):
            node = self._lookup(arg)
            await self._stream.write(self._stat_v2(ident, node))
        elif ident in (b"LIST", b"LIS2"):
            await self._list(arg, v2=ident == b"LIS2")
        elif ident == b"SEND":
            await self._send(arg)
        elif ident == b"RECV":
            await self._recv(arg)
        else:
            raise SyncFailure(f"unknown sync command {ident!r}")

    @staticmethod
    def _stat_v2(ident: bytes, node: Node | None) -> bytes:
        if node is None:
            return _STAT_V2.pack(ident, _ENOENT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        return _STAT_V2.pack(ident, 0, 0, id(node) & 0xFFFFFFFF, node.mode, 1, 2000, 2000,
                             node.size, node.mtime, node.mtime, node.mtime)

    async def _list(self, path: str, v2: bool) -> None:
        node = self._lookup(path)
        entries: list[tuple[str, Node]] = []
        if node is not None and node.is_dir:
            entries = [(".", node), ("..", node)] + self._fs.listdir(path)
        out = bytearray()
        for name, child in entries:
            raw = name.encode()
            if v2:
                out += _DENT_V2.pack(b"DNT2", 0, 0, id(child) & 0xFFFFFFFF, child.mode, 1, 2000,
                                     2000, child.size, child.mtime, child.mtime, child.mtime, len(raw))
            else:
                out += _DENT_V1.pack(b"DENT", child.mode, child.size, child.mtime, len(raw))
            out += raw
        out += b"DONE" + bytes((_DENT_V2.size if v2 else _DENT_V1.size) - 4)
        await self._stream.write(bytes(out))

    async def _send(self, arg: str) -> None:
        path, _, mode_text = arg.rpartition(",")
        if not path:
            path, mode_text = arg, "420"
        refusal: str | None = None
        try:
            split_path(path)
            mode = int(mode_text)
        except (FsError, ValueError) as exc:
            refusal = f"{path}: {exc}"
            mode = 0o644
        data = bytearray()
        mtime = 0
        while True:
            ident, length = _REQ.unpack(await self._stream.read_exactly(8))
            if ident == b"DATA":
                if length > SYNC_DATA_MAX:
                    raise SyncFailure(f"DATA chunk of {length} bytes is too large")
                data += await self._stream.read_exactly(length)
            elif ident == b"DONE":
                mtime = length
                break
            else:
                raise SyncFailure(f"unexpected {ident!r} during SEND")
        if refusal is not None:
            raise SyncFailure(refusal)
        if not statmod.S_ISREG(mode) and statmod.S_IFMT(mode) != 0:
            raise SyncFailure(f"{path}: only regular files can be pushed")
        try:
            self._fs.write(path, bytes(data), mode=mode, mtime=mtime or None, parents=True)
        except FsError as exc:
            raise SyncFailure(f"{path}: {exc.args[0]}") from exc
        await self._stream.write(b"OKAY" + bytes(4))

    async def _recv(self, path: str) -> None:
        try:
            data = self._fs.read(path)
        except FsError as exc:
            raise SyncFailure(f"{path}: {exc.args[0]}") from exc
        out = bytearray()
        for start in range(0, len(data), SYNC_DATA_MAX):
            chunk = data[start : start + SYNC_DATA_MAX]
            out += b"DATA" + struct.pack("<I", len(chunk)) + chunk
        out += b"DONE" + bytes(4)
        await self._stream.write(bytes(out))


async def serve_sync(fs: FileSystem, stream: AdbStream) -> None:
    """Stream handler for `sync:`."""
    await SyncSession(fs, stream).serve()
