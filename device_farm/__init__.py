"""Everything that touches a phone: the Device protocol, its records, and backends.

``device_farm`` never imports ``planner_runtime``. Records are frozen dataclasses; the
:class:`Device` protocol is what harness tools, verifiers and the pool program against, so the
same code drives a real phone, an emulator and the built-in virtual phone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, Union, runtime_checkable

Payload = Union[bytes, str, os.PathLike[str]]
"""What :meth:`Device.push` writes: the bytes themselves, or the path of a local file."""


@dataclass(frozen=True)
class ShellResult:
    command: str
    output: str
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class DeviceInfo:
    serial: str
    model: str
    sdk: int
    width: int
    height: int


@runtime_checkable
class Device(Protocol):
    """A phone reachable for shell, UI hierarchy and input."""

    serial: str

    def connect(self) -> None: ...
    def close(self) -> None: ...
    def info(self) -> DeviceInfo: ...
    def shell(self, command: str | Sequence[str], *, timeout: float = 20.0) -> ShellResult: ...
    def dump_hierarchy(self) -> str: ...
    def click(self, x: int, y: int) -> None: ...
    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None: ...
    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.3) -> None: ...
    def set_text(self, selector: dict, text: str) -> None: ...
    def press(self, key: str) -> None: ...
    def screenshot(self) -> bytes: ...  # PNG
    def push(self, data: Payload, remote: str, mode: int = 0o644) -> None:
        """Write ``data`` (bytes, or a local file's contents) to the file ``remote`` on the phone
        with permission bits ``mode``, creating missing folders; an existing file is replaced."""
        ...


def payload_bytes(data: Payload) -> bytes:
    """The bytes a push writes. A local file is read here, so a missing one raises
    FileNotFoundError (the caller's mistake) before the phone is asked anything."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return Path(data).read_bytes()
