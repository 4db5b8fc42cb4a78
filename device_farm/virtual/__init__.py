"""The virtual phone: a programmable Android device that speaks the real adbd wire
protocol and the uiautomator2 JSON-RPC, so the same client code drives it and a real phone."""

from device_farm.virtual.phone import VirtualPhone
from device_farm.virtual.phone_loop import PhoneLoop
from device_farm.virtual.snapshot import SnapshotError

__all__ = ["PhoneLoop", "SnapshotError", "VirtualPhone"]
