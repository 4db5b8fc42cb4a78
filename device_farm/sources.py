"""Where a :class:`~device_farm.pool.pool.DevicePool` finds its phones: the ``DeviceSource`` seam.

A source lists the devices it can reach (:meth:`DeviceSource.discover`), builds a :class:`Device`
for one of them (:meth:`DeviceSource.open`, no I/O until ``connect()``), checks its health
(:meth:`DeviceSource.probe`) and tries to bring it back after a transport drop
(:meth:`DeviceSource.reconnect`). The pool owns leases, fault counts and quarantine; a source
knows only its transport. Backends: :class:`device_farm.adb.source.AdbSource` (one adb server),
:class:`device_farm.virtual.source.VirtualSource` (built-in virtual phones behind a private adb
server) and :class:`device_farm.appium.source.AppiumSource`. A source that can put a device back
in a known state implements :class:`CleanSlate` too (virtual phones restore their boot
snapshot); a real phone cannot, so its data is whatever the last user left.

This module and :mod:`device_farm.health` sit below both sides: the transports (``adb``,
``appium``, ``virtual``) implement the protocol and the pool consumes it, and neither side
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from device_farm import Device
from device_farm.health import DeviceHealth

READY = "device"  # adb's word for a usable device; sources use it for "ready" whatever their transport


@dataclass(frozen=True)
class DeviceCandidate:
    """One device a source can reach, as it was last listed.

    ``key`` is unique across every source of a pool and stable across processes on one host
    (it names the device's lock file), e.g. ``adb/127.0.0.1:5037/emulator-5554``.
    ``state`` is ``device`` when usable, otherwise the transport's own word (``offline``,
    ``unauthorized``, ``missing``...).
    """

    key: str
    serial: str
    source: str
    state: str = READY
    address: str = ""  # where it is reached: adb server host:port, Appium URL
    model: str = ""

    @property
    def ready(self) -> bool:
        return self.state == READY


@runtime_checkable
class DeviceSource(Protocol):
    """A transport's view of its devices. Constructors do no I/O; ``start()`` does."""

    name: str

    def start(self) -> None:
        """Bring up whatever the source runs itself (servers, virtual phones); may be a no-op."""
        ...

    def close(self) -> None:
        """Stop what ``start()`` started; devices it opened are closed by the pool first."""
        ...

    def discover(self) -> list[DeviceCandidate]:
        """Every device this source can see now, ready or not. Raises DeviceOffline when the
        source itself (adb server, Appium endpoint) is unreachable."""
        ...

    def open(self, candidate: DeviceCandidate) -> Device:
        """A Device for ``candidate``, not yet connected (the pool calls ``connect()``)."""
        ...

    def probe(self, candidate: DeviceCandidate) -> DeviceHealth:
        """Check the device's health without leaving anything open; never raises for a sick
        device (the record says what is wrong)."""
        ...

    def reconnect(self, candidate: DeviceCandidate) -> bool:
        """Try to re-attach a device after a transport drop (``adb connect`` for network
        serials); True when it is listed as ready again."""
        ...


@runtime_checkable
class CleanSlate(Protocol):
    """A source that can put a device back in a known clean state before each use."""

    def restore_clean(self, candidate: DeviceCandidate) -> None:
        """Put ``candidate`` back in the state it had when the source started it, in place
        (connections stay up); raises a DeviceError when it cannot."""
        ...
