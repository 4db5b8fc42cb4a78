"""One ADB stream as the services see it: ordered bytes in, flow-controlled bytes out.

The connection feeds host WRTE payloads in and acknowledges each at once; `write` sends
WRTE packets no larger than the negotiated payload size and keeps at most one of them
unacknowledged, as the ADB protocol requires.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Protocol

from device_farm.virtual.adbd.packets import A_CLSE, A_WRTE, Packet


class StreamClosed(ConnectionError):
    """The other side closed the stream (or the connection went away)."""


class PacketSink(Protocol):
    """Where a stream sends its packets (the transport connection)."""

    async def send_packet(self, packet: Packet) -> None: ...

    def forget_stream(self, local_id: int) -> None: ...


class AdbStream:
    """A device-side stream endpoint with its local and remote ids."""

    def __init__(self, sink: PacketSink, local_id: int, remote_id: int, max_payload: int) -> None:
        self.local_id = local_id
        self.remote_id = remote_id
        self._sink = sink
        self._max_payload = max_payload
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._pending = bytearray()
        self._acked = asyncio.Event()
        self._acked.set()
        self._closed = False
        self._closed_event = asyncio.Event()
        self.remote_closed = False

    # --- fed by the connection -------------------------------------------------------
    def on_data(self, data: bytes) -> None:
        if not self._closed:
            self._inbox.put_nowait(data)

    def on_okay(self) -> None:
        self._acked.set()

    def on_remote_close(self) -> None:
        self.remote_closed = True
        self._closed = True
        self._closed_event.set()
        self._inbox.put_nowait(None)
        self._acked.set()

    # --- used by services ------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    async def read(self) -> bytes:
        """Next chunk the host wrote; b"" once the stream is closed."""
        if self._pending:
            data = bytes(self._pending)
            self._pending.clear()
            return data
        if self._closed and self._inbox.empty():
            return b""
        data = await self._inbox.get()
        if data is None:
            self._inbox.put_nowait(None)
            return b""
        return data

    async def read_exactly(self, n: int) -> bytes:
        """Exactly n bytes across WRTE boundaries; StreamClosed if the stream ends first."""
        while len(self._pending) < n:
            if self._closed and self._inbox.empty():
                raise StreamClosed(f"stream {self.local_id} closed")
            data = await self._inbox.get()
            if data is None:
                self._inbox.put_nowait(None)
                raise StreamClosed(f"stream {self.local_id} closed")
            self._pending += data
        out = bytes(self._pending[:n])
        del self._pending[:n]
        return out

    async def write(self, data: bytes) -> None:
        """Send data as WRTE packets, waiting for the host's OKAY between them."""
        view = memoryview(data)
        while view:
            await self._acked.wait()
            if self._closed:
                raise StreamClosed(f"stream {self.local_id} closed")
            chunk, view = view[: self._max_payload], view[self._max_payload :]
            self._acked.clear()
            await self._sink.send_packet(Packet(A_WRTE, self.local_id, self.remote_id, bytes(chunk)))

    async def close(self) -> None:
        """Close from the device side (a CLSE is sent unless the host closed first)."""
        if self._closed:
            self._sink.forget_stream(self.local_id)
            return
        self._closed = True
        self._closed_event.set()
        self._inbox.put_nowait(None)
        self._sink.forget_stream(self.local_id)
        await self._sink.send_packet(Packet(A_CLSE, self.local_id, self.remote_id))


StreamHandler = Callable[[AdbStream], Awaitable[None]]
"""A service bound to one opened stream; the stream is closed when it returns."""
