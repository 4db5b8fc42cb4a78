"""Whole-phone snapshots, the virtual counterpart of an emulator's saved state.

A snapshot holds everything a client can observe: properties, settings, the file system,
every app's provider databases (SQLite's own serialisation), the activity stack with each
activity's transient UI state (field text, focus, open dialogs), system dialogs on screen
(ANR, crash, permission prompts, pop-ups), notifications and the shade, granted runtime
permissions, processes, screen power, clipboard, battery and the wall clock. A fault plan's
schedule is not part of it. Restoring puts all of it back on the running system
in place, so adb connections and the uiautomator2 server stay up, as with an emulator's
`avd snapshot load`. A snapshot can be restored any number of times, and also after a
factory reset (apps are matched by package name).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from device_farm.errors import DeviceError
from device_farm.virtual.os.fs import Node

if TYPE_CHECKING:
    from device_farm.virtual.os.app import Activity, App
    from device_farm.virtual.os.dialogs import Dialog
    from device_farm.virtual.os.notifications import Notification
    from device_farm.virtual.os.system import AndroidSystem, Process


class SnapshotError(DeviceError, LookupError):
    """No snapshot by that name, or it does not fit the phone's installed apps."""

    infra = False


@dataclass(frozen=True)
class Snapshot:
    """One saved phone state. Treat as opaque; restore with `restore_snapshot`."""

    name: str
    props: dict[str, str]
    settings: dict[str, dict[str, str]]
    root: Node
    databases: dict[str, tuple[bytes, ...]]
    apps: dict[str, "App"]
    """The app objects the saved activities point at, by package (re-pointed on restore)."""
    owner: "AndroidSystem"
    stack: list["Activity"]
    processes: list["Process"]
    next_pid: int
    screen_on: bool
    clipboard: str | None
    clock: float
    battery_level: int
    dialogs: tuple["Dialog", ...] = ()
    notifications: tuple["Notification", ...] = ()
    next_notification_id: int = 1
    shade_open: bool = False
    granted: tuple[tuple[str, frozenset[str]], ...] = ()


def capture(system: "AndroidSystem", name: str) -> Snapshot:
    """Copy the system's observable state (runs on the phone's loop)."""
    keep: dict[int, Any] = {id(system): system}
    keep.update({id(app): app for app in system.apps.values()})
    return Snapshot(
        name=name,
        props=dict(system.props),
        settings={ns: dict(table) for ns, table in system.settings.items()},
        root=copy.deepcopy(system.fs.root),
        databases={pkg: tuple(p.db.serialize() for p in app.providers())
                   for pkg, app in system.apps.items()},
        apps=dict(system.apps),
        owner=system,
        stack=copy.deepcopy(system.stack, keep),
        processes=system.processes(),
        next_pid=system.next_pid,
        screen_on=system.screen_on,
        clipboard=system.clipboard,
        clock=system.now(),
        battery_level=system.battery_level,
        dialogs=tuple(system.dialogs),
        notifications=tuple(system.notifications.items),
        next_notification_id=system.notifications.next_id,
        shade_open=system.shade_open,
        granted=tuple((pkg, frozenset(names)) for pkg, names in system.granted.items()),
    )


def restore(system: "AndroidSystem", snap: Snapshot) -> None:
    """Put the saved state back on `system` (runs on the phone's loop)."""
    if set(snap.apps) != set(system.apps):
        raise SnapshotError(f"snapshot {snap.name!r} was taken with other apps installed")
    for pkg, blobs in snap.databases.items():
        providers = system.apps[pkg].providers()
        if len(providers) != len(blobs):
            raise SnapshotError(f"snapshot {snap.name!r}: {pkg} has other providers now")
        for provider, blob in zip(providers, blobs):
            provider.db.deserialize(blob)
    # Copy again so the snapshot stays reusable; saved activities point at today's apps.
    remap: dict[int, Any] = {id(snap.owner): system}
    remap.update({id(old): system.apps[pkg] for pkg, old in snap.apps.items()})
    system.stack = copy.deepcopy(snap.stack, remap)
    system.props = dict(snap.props)
    system.settings = {ns: dict(table) for ns, table in snap.settings.items()}
    system.fs.root = copy.deepcopy(snap.root)
    system.set_processes(snap.processes, snap.next_pid)
    system.screen_on = snap.screen_on
    system.clipboard = snap.clipboard
    system.set_time(snap.clock)
    system.battery_level = snap.battery_level
    system.dialogs = list(snap.dialogs)
    system.notifications.items = list(snap.notifications)
    system.notifications.next_id = snap.next_notification_id
    system.shade_open = snap.shade_open
    system.granted = {pkg: set(names) for pkg, names in snap.granted}
