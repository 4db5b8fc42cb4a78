"""ADB transport packets: the 24-byte header, command codes and their encoding.

The wire format is six little-endian u32 (`command, arg0, arg1, data_length, data_check,
magic`) followed by `data_length` payload bytes. `magic` is `command ^ 0xFFFFFFFF`; from
protocol version 0x01000001 the payload checksum may be 0, which is what this device sends.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

A_SYNC = 0x434E5953
A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_STLS = 0x534C5453

A_VERSION = 0x01000001
MAX_PAYLOAD = 1024 * 1024

HEADER = struct.Struct("<6I")
COMMAND_NAMES = {
    A_SYNC: "SYNC", A_CNXN: "CNXN", A_AUTH: "AUTH", A_OPEN: "OPEN",
    A_OKAY: "OKAY", A_CLSE: "CLSE", A_WRTE: "WRTE", A_STLS: "STLS",
}


class MalformedPacket(ValueError):
    """The bytes on the wire are not an ADB packet; the connection cannot be trusted."""


@dataclass(frozen=True)
class Packet:
    """One ADB transport message."""

    command: int
    arg0: int
    arg1: int
    data: bytes = b""

    @property
    def name(self) -> str:
        return COMMAND_NAMES.get(self.command, f"0x{self.command:08x}")

    def encode(self) -> bytes:
        header = HEADER.pack(
            self.command, self.arg0, self.arg1, len(self.data), 0, self.command ^ 0xFFFFFFFF
        )
        return header + self.data


@dataclass(frozen=True)
class Header:
    """A decoded header whose payload has not been read yet."""

    command: int
    arg0: int
    arg1: int
    data_length: int


def decode_header(raw: bytes, max_payload: int = MAX_PAYLOAD) -> Header:
    """Check and decode a 24-byte header; raise MalformedPacket if it is not one."""
    command, arg0, arg1, length, _check, magic = HEADER.unpack(raw)
    if magic != command ^ 0xFFFFFFFF:
        raise MalformedPacket(f"bad magic 0x{magic:08x} for command 0x{command:08x}")
    if command not in COMMAND_NAMES:
        raise MalformedPacket(f"unknown command 0x{command:08x}")
    if length > max_payload:
        raise MalformedPacket(f"payload of {length} bytes exceeds {max_payload}")
    return Header(command, arg0, arg1, length)
