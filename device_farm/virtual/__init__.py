"""The virtual phone: a programmable Android device that speaks the real adbd wire
protocol and the uiautomator2 JSON-RPC, so the same client code drives it and a real phone.

Its rooms, bottom to top: ``ui`` (views, widgets, the system's windows) and ``adbd`` (the wire
protocol) import nothing of the phone; ``os`` (the Android system) builds on them; ``apps``,
``uiautomator`` and ``shell`` on ``os``; ``services`` (what an adb stream reaches) on the shell;
``faults`` on the transport, the system and the uiautomator2 server; ``phone`` wires them all and
``source`` serves phones to a pool. The names below are imported on first use, so importing a
module of this package (the pool source, say) does not load the whole phone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from device_farm.virtual.phone import VirtualPhone
    from device_farm.virtual.phone_loop import PhoneLoop
    from device_farm.virtual.snapshot import SnapshotError

_EXPORTS = {
    "PhoneLoop": "device_farm.virtual.phone_loop",
    "SnapshotError": "device_farm.virtual.snapshot",
    "VirtualPhone": "device_farm.virtual.phone",
}

__all__ = ["PhoneLoop", "SnapshotError", "VirtualPhone"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
