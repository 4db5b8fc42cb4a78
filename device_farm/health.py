"""Device health: what a probe found (adb state, boot, UI server, battery, storage) as a record.

:class:`DeviceHealth` is frozen and JSON-friendly; :func:`probe_over_shell` fills it from any
:class:`~device_farm.Device` that runs shell commands (``getprop sys.boot_completed``,
``dumpsys battery``, ``df /data``), so every source can reuse it and add its own UI check.
A value the device could not report stays ``None`` and is not held against it; a value under
the :class:`HealthPolicy` thresholds is a problem and the device is not leased out.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from device_farm import Device
from device_farm.errors import DeviceError

_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds under which a device is unfit for a lease."""

    min_battery: int = 5  # percent
    min_free_mb: int = 64  # on /data
    require_ui: bool = False  # a silent uiautomator server is a problem (else connect() starts it)


@dataclass(frozen=True)
class DeviceHealth:
    state: str  # adb state (``device``, ``offline``, ``unauthorized``, ``missing``) or the source's word
    boot_completed: bool | None = None
    ui_ok: bool | None = None  # uiautomator /ping (or the source's UI check) answered
    battery: int | None = None  # percent
    free_mb: int | None = None  # free space on /data
    problems: tuple[str, ...] = ()
    checked_at: float = field(default_factory=time.time)  # wall clock, seconds

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = list(self.problems)
        data["healthy"] = self.healthy
        return data

    @classmethod
    def unreachable(cls, state: str, reason: str) -> DeviceHealth:
        return cls(state=state, problems=(reason,))


# What the user can do about a phone adb lists but cannot drive, by its adb state.
_STATE_HINTS = {
    "unauthorized": "accept the USB debugging dialog on it",
    "offline": "reconnect it (adb reconnect) or restart adb on it",
    "no permissions": "give your user access to the USB device (udev rules)",
    "authorizing": "wait for the USB debugging dialog and accept it",
}


def not_ready_reason(serial: str, state: str) -> str:
    """One line saying that a listed phone cannot be driven and what to do about it."""
    hint = _STATE_HINTS.get(state, "make it ready (adb devices lists it as 'device')")
    return f"phone {serial} is {state}: {hint}"


def parse_battery(text: str) -> int | None:
    """Battery percent from ``dumpsys battery`` (``level`` scaled by ``scale``)."""
    level = re.search(r"^\s*level:\s*(\d+)", text, re.M)
    if level is None:
        return None
    scale = re.search(r"^\s*scale:\s*(\d+)", text, re.M)
    denominator = int(scale.group(1)) if scale and int(scale.group(1)) > 0 else 100
    return round(int(level.group(1)) * 100 / denominator)


def parse_df_free_mb(text: str) -> int | None:
    """Free MiB on the last line of ``df /data``: toybox's 1K-blocks columns or the old
    toolbox form with sizes like ``7.5G``."""
    lines = [line.split() for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    header, row = lines[0], lines[-1]
    if "Available" in header or "Avail" in header:
        # Available, Use%, mount point close the row, also when a long device name wrapped it.
        value = row[-3] if len(row) >= 3 else ""
        if value.isdigit():
            return int(value) // 1024 if "1K-blocks" in header else int(value) // (1024 * 1024)
    elif "Free" in header and len(row) >= 4:  # toolbox: Filesystem Size Used Free Blksize
        value = row[3]
    else:
        return None
    match = re.fullmatch(r"([\d.]+)([KMGT])?", value)
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS.get(match.group(2) or "K", 1 / 1024))


def probe_over_shell(
    device: Device, *, state: str, ui_check: Callable[[], bool] | None, policy: HealthPolicy = HealthPolicy()
) -> DeviceHealth:
    """Probe a connected ``device``; a DeviceError on the way becomes a problem in the record."""
    problems: list[str] = []
    boot = ui = None
    battery = free_mb = None
    try:
        boot = device.shell("getprop sys.boot_completed", timeout=5).output.strip() == "1"
        if not boot:
            problems.append("boot not completed")
        battery = parse_battery(device.shell("dumpsys battery", timeout=5).output)
        if battery is not None and battery < policy.min_battery:
            problems.append(f"battery {battery}% < {policy.min_battery}%")
        free_mb = parse_df_free_mb(device.shell("df /data", timeout=5).output)
        if free_mb is not None and free_mb < policy.min_free_mb:
            problems.append(f"storage {free_mb} MiB free < {policy.min_free_mb} MiB")
        if ui_check is not None:
            ui = ui_check()
            if not ui and policy.require_ui:
                problems.append("uiautomator server does not answer /ping")
    except DeviceError as exc:
        problems.append(f"{exc.code}: {exc}")
    return DeviceHealth(state=state, boot_completed=boot, ui_ok=ui, battery=battery, free_mb=free_mb,
                        problems=tuple(problems))
