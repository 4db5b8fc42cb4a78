"""The device side of the ADB transport over TCP: the virtual phone's adbd.

It answers the host's CNXN with a banner (by default without AUTH, so the device is online
at once; with a key ring it first sends AUTH tokens and goes online once the host signs one
with a trusted key, or offers a key the ring accepts), opens streams for OPEN requests
through a service resolver, acknowledges every host WRTE, and never answers a CLSE. Packets
for unknown streams, and OPENs before authorization, are ignored. A malformed packet closes
that connection only; a failing service closes that stream only.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import Callable

from device_farm.virtual.adbd.auth import (
    AUTH_RSAPUBLICKEY, AUTH_SIGNATURE, AUTH_TOKEN, TOKEN_SIZE, AdbPublicKey, BadAdbKey, KeyRing,
)
from device_farm.virtual.adbd.packets import (
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE, HEADER, MAX_PAYLOAD,
    MalformedPacket, Packet, decode_header,
)
from device_farm.virtual.adbd.stream import AdbStream, StreamClosed, StreamHandler

logger = logging.getLogger(__name__)

FEATURES = ("shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir")
"""Only what this device implements: each feature changes what the host sends."""

ServiceResolver = Callable[[str], "StreamHandler | None"]


@dataclass(frozen=True)
class OpenEffect:
    """What a fault does to one opened service: hold it `delay` seconds before it runs;
    with `drop_after_bytes` set, cut the whole host connection once the service has sent
    that many payload bytes (at once for 0, or when it ends)."""

    delay: float = 0.0
    drop_after_bytes: int | None = None


OpenHook = Callable[[str], OpenEffect]
NO_EFFECT = OpenEffect()


def make_banner(props: dict[str, str]) -> bytes:
    """The CNXN payload: `device::key=value;...;features=a,b`. Values never contain ':'."""
    keys = ("ro.product.name", "ro.product.model", "ro.product.device")
    fields = [f"{k}={props.get(k, '').replace(':', '_').replace(';', '_')}" for k in keys]
    fields.append("features=" + ",".join(FEATURES))
    return ("device::" + ";".join(fields)).encode()


class AdbdConnection:
    """One host connection (the adb server) and its open streams."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        banner: bytes,
        resolve: ServiceResolver,
        name: str,
        on_open: OpenHook | None = None,
        keyring: KeyRing | None = None,
    ) -> None:
        self._on_open = on_open
        self._keyring = keyring
        self._authorized = keyring is None
        self._token = b""
        self._drops: dict[int, int] = {}
        self._reader = reader
        self._writer = writer
        self._banner = banner
        self._resolve = resolve
        self._name = name
        self._streams: dict[int, AdbStream] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_id = 1
        self._max_payload = 4096
        self._write_lock = asyncio.Lock()

    async def send_packet(self, packet: Packet) -> None:
        async with self._write_lock:
            if self._drops and packet.arg0 in self._drops and packet.command in (A_WRTE, A_CLSE):
                left = self._drops[packet.arg0]
                if packet.command == A_CLSE or len(packet.data) >= left:
                    if left and packet.command == A_WRTE:
                        self._writer.write(Packet(A_WRTE, packet.arg0, packet.arg1, packet.data[:left]).encode())
                    self._cut(packet.arg0)
                    raise StreamClosed("host connection dropped by a fault")
                self._drops[packet.arg0] = left - len(packet.data)
            self._writer.write(packet.encode())
            await self._writer.drain()

    def _cut(self, local_id: int) -> None:
        logger.warning("adbd %s: fault: dropping the host connection mid-stream %d", self._name, local_id)
        self._drops.clear()
        transport = self._writer.transport
        if transport is not None:
            transport.abort()

    def forget_stream(self, local_id: int) -> None:
        self._streams.pop(local_id, None)

    async def serve(self) -> None:
        try:
            while True:
                raw = await self._reader.readexactly(HEADER.size)
                header = decode_header(raw)
                data = await self._reader.readexactly(header.data_length) if header.data_length else b""
                await self._dispatch(Packet(header.command, header.arg0, header.arg1, data))
        except MalformedPacket as exc:
            logger.warning("adbd %s: closing connection on malformed packet: %s", self._name, exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            logger.debug("adbd %s: host went away", self._name)
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        for stream in list(self._streams.values()):
            stream.on_remote_close()
        self._streams.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except ConnectionError:
            pass

    async def _dispatch(self, packet: Packet) -> None:
        if packet.command == A_CNXN:
            self._max_payload = max(256, min(packet.arg1, MAX_PAYLOAD))
            if self._authorized:
                await self._online()
            else:
                await self._send_token()
        elif packet.command == A_AUTH:
            await self._auth(packet)
        elif not self._authorized:
            logger.debug("adbd %s: ignoring %s before authorization", self._name, packet.name)
        elif packet.command == A_OPEN:
            await self._open(packet)
        elif packet.command == A_WRTE:
            stream = self._streams.get(packet.arg1)
            if stream is None:
                return
            stream.on_data(packet.data)
            await self.send_packet(Packet(A_OKAY, stream.local_id, stream.remote_id))
        elif packet.command == A_OKAY:
            stream = self._streams.get(packet.arg1)
            if stream is not None:
                stream.on_okay()
        elif packet.command == A_CLSE:
            stream = self._streams.pop(packet.arg1, None)
            if stream is not None:
                stream.on_remote_close()
        else:
            logger.debug("adbd %s: ignoring %s", self._name, packet.name)

    async def _online(self) -> None:
        await self.send_packet(Packet(A_CNXN, A_VERSION, MAX_PAYLOAD, self._banner))

    async def _send_token(self) -> None:
        self._token = os.urandom(TOKEN_SIZE)
        await self.send_packet(Packet(A_AUTH, AUTH_TOKEN, 0, self._token))

    async def _auth(self, packet: Packet) -> None:
        """The host's answer to a token: a signature, or its public key to be trusted."""
        ring = self._keyring
        if ring is None or self._authorized:
            logger.debug("adbd %s: ignoring AUTH (not asked for)", self._name)
            return
        if packet.arg0 == AUTH_SIGNATURE and self._token:
            key = ring.signed_by_trusted(self._token, packet.data)
            if key is not None:
                logger.info("adbd %s: host authorized by key %s", self._name, key.comment or "(no comment)")
                self._authorized = True
                await self._online()
            else:
                await self._send_token()  # the host tries its next key
        elif packet.arg0 == AUTH_RSAPUBLICKEY:
            try:
                offered = AdbPublicKey.parse(packet.data.decode("ascii", "replace"))
            except BadAdbKey as exc:
                logger.warning("adbd %s: host offered an unusable key: %s", self._name, exc)
                return
            if ring.offer(offered):
                logger.info("adbd %s: accepted new host key %s", self._name, offered.comment or "(no comment)")
                self._authorized = True
                await self._online()
            else:
                logger.info("adbd %s: refused unknown host key %s; the host stays unauthorized",
                            self._name, offered.comment or "(no comment)")
        else:
            logger.debug("adbd %s: ignoring AUTH type %d", self._name, packet.arg0)

    async def _open(self, packet: Packet) -> None:
        service = packet.data.rstrip(b"\x00").decode("utf-8", "replace")
        handler = self._resolve(service)
        if handler is None:
            logger.info("adbd %s: refusing service %r", self._name, service)
            await self.send_packet(Packet(A_CLSE, 0, packet.arg0))
            return
        local_id = self._next_id
        self._next_id += 1
        stream = AdbStream(self, local_id, packet.arg0, self._max_payload)
        self._streams[local_id] = stream
        effect = self._on_open(service) if self._on_open is not None else NO_EFFECT
        await self.send_packet(Packet(A_OKAY, local_id, packet.arg0))
        if effect.drop_after_bytes == 0:
            self._cut(local_id)
            return
        if effect.drop_after_bytes is not None:
            self._drops[local_id] = effect.drop_after_bytes
        task = asyncio.get_running_loop().create_task(self._run(service, handler, stream, effect.delay))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, service: str, handler: StreamHandler, stream: AdbStream, delay: float) -> None:
        try:
            if delay > 0:
                logger.info("adbd %s: fault: %r stalls for %.1f s", self._name, service, delay)
                await asyncio.sleep(delay)
            await handler(stream)
        except StreamClosed:
            logger.debug("adbd %s: %r closed by host", self._name, service)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug in one service must not take the phone down
            logger.exception("adbd %s: service %r failed; closing its stream", self._name, service)
        finally:
            if not stream.remote_closed and self._writer.is_closing() is False:
                try:
                    await stream.close()
                except ConnectionError:
                    pass
            else:
                self.forget_stream(stream.local_id)


class AdbdServer:
    """Accepts host connections on a TCP address and serves each one."""

    def __init__(self, banner: bytes, resolve: ServiceResolver, name: str) -> None:
        self.banner = banner
        self._resolve = resolve
        self._name = name
        self.on_open: OpenHook | None = None
        """Called for every service opened, in arrival order (the fault injector)."""
        self.keyring: KeyRing | None = None
        """With a key ring, hosts must authenticate (AUTH) before they see the device."""
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Listen and return the bound port."""
        self._server = await asyncio.start_server(self._accept, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        # Stop listening, end the open connections, then wait for the listener: from Python 3.12.1
        # wait_closed() also waits for every connection, so waiting first hung until the host left.
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self.drop_connections()
        if server is not None:
            await server.wait_closed()

    async def drop_connections(self) -> None:
        """Cut every host connection (a cable pull); the listener stays up."""
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        conn = AdbdConnection(reader, writer, self.banner, self._resolve, f"{self._name}<-{peer}",
                              self.on_open, self.keyring)
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await conn.serve()
        except asyncio.CancelledError:
            logger.debug("adbd %s: connection from %s cut", self._name, peer)
        finally:
            self._connections.discard(task)
