"""adb helpers for tests: a hand-written adb host that speaks the transport protocol straight to
a phone's adbd port (malformed packets, the AUTH steps), where the real adb server would not, and
host key pairs made by the adb binary."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import adbutils

from device_farm.virtual.adbd.packets import A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE, HEADER, Packet


class RawAdb:
    """One TCP connection to ``phone``'s adbd; with ``handshake``, CNXN is exchanged at once (a
    phone that asks for AUTH fails that; pass ``handshake=False`` and do the steps yourself)."""

    def __init__(self, phone, handshake: bool = True) -> None:
        self.sock = socket.create_connection((phone.host, phone.port), timeout=5)
        if handshake:
            self.send(Packet(A_CNXN, A_VERSION, 4096, b"host::\x00"))
            assert self.recv().command == A_CNXN

    def send(self, packet: Packet) -> None:
        self.sock.sendall(packet.encode())

    def recv(self) -> Packet:
        command, arg0, arg1, length, _, _ = HEADER.unpack(self._exact(HEADER.size))
        return Packet(command, arg0, arg1, self._exact(length) if length else b"")

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("phone hung up")
            buf += chunk
        return buf

    def open(self, service: bytes, local_id: int = 1) -> Packet:
        self.send(Packet(A_OPEN, local_id, 0, service + b"\x00"))
        return self.recv()

    def write(self, reply: Packet, data: bytes, local_id: int = 1) -> None:
        self.send(Packet(A_WRTE, local_id, reply.arg0, data))

    def read_until_close(self) -> bytes:
        out = b""
        while True:
            packet = self.recv()
            if packet.command == A_CLSE:
                return out
            if packet.command == A_WRTE:
                out += packet.data
                self.send(Packet(A_OKAY, packet.arg1, packet.arg0))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawAdb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def keygen(path: Path) -> Path:
    """A fresh adb key pair (`path`, `path`.pub) made by the adb binary; returns the .pub."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([adbutils.adb_path(), "keygen", str(path)], check=True, capture_output=True, timeout=60)
    return path.with_name(path.name + ".pub")
