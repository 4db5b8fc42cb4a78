"""Posted notifications, the notification shade that shows them, and `dumpsys notification`.

Notifications are frozen records kept on the system in posting order (so snapshots keep
them). The shade is a window of `com.android.systemui` listing the newest first, with
the ids Android's shade uses (`android:id/title`, `android:id/text`, ...); tapping one
opens its app and removes it, "Clear all" removes them all. The dump follows Android 14's
`dumpsys notification --noredact` record lines, with title and text among the extras.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from device_farm.virtual.apps.widgets import button, group, text_view
from device_farm.virtual.ui import Bounds, ViewNode

if TYPE_CHECKING:
    from device_farm.virtual.system import AndroidSystem

SYSTEMUI = "com.android.systemui"
ROW_HEIGHT = 230
SHADE_TOP = 300


@dataclass(frozen=True)
class Notification:
    id: int
    package: str
    title: str
    text: str
    when: float
    """The phone's clock when it was posted (seconds since the epoch)."""
    channel: str = "default"

    @property
    def key(self) -> str:
        return f"0|{self.package}|{self.id}|null|10{self.id % 1000:03d}"


class NotificationList:
    """The notifications currently posted on one phone."""

    def __init__(self) -> None:
        self.items: list[Notification] = []
        self.next_id = 1

    def post(self, package: str, title: str, text: str, when: float, channel: str = "default") -> Notification:
        note = Notification(self.next_id, package, title, text, when, channel)
        self.next_id += 1
        self.items.append(note)
        return note

    def cancel(self, note_id: int) -> None:
        self.items = [n for n in self.items if n.id != note_id]

    def clear(self) -> None:
        self.items = []


def shade_views(system: "AndroidSystem", screen: Bounds) -> ViewNode:
    """The expanded shade: newest notification first, as many as fit, then "Clear all"."""
    w = screen.right
    rows: list[ViewNode] = []
    top = SHADE_TOP
    notes = list(reversed(system.notifications.items))
    bottom = screen.bottom - 200
    for note in notes:
        if top + ROW_HEIGHT > bottom:
            break
        app = system.apps.get(note.package)
        label = app.label if app is not None else note.package.rsplit(".", 1)[-1].capitalize()
        row = group(Bounds(30, top, w - 30, top + ROW_HEIGHT - 10), [
            text_view(Bounds(80, top + 10, w - 80, top + 60), label, "android:id/app_name_text"),
            text_view(Bounds(80, top + 65, w - 80, top + 135), note.title, "android:id/title"),
            text_view(Bounds(80, top + 140, w - 80, top + 210), note.text, "android:id/text"),
        ], f"{SYSTEMUI}:id/expandableNotificationRow", cls="android.widget.FrameLayout",
            on_click=lambda note=note: system.open_notification(note))
        row.content_desc = f"{label} notification: {note.title}"
        rows.append(row)
        top += ROW_HEIGHT
    children: list[ViewNode] = [
        text_view(Bounds(60, 150, w - 60, 260), f"{len(notes)} notifications" if notes else "No notifications",
                  f"{SYSTEMUI}:id/header_label"),
        group(Bounds(0, SHADE_TOP, w, bottom), rows, f"{SYSTEMUI}:id/notification_stack_scroller",
              scrollable=len(rows) < len(notes)),
    ]
    if notes:
        children.append(button(Bounds(w - 360, bottom + 40, w - 60, bottom + 160), "Clear all",
                               f"{SYSTEMUI}:id/dismiss_text", on_click=system.notifications_cleared))
    root = ViewNode("android.widget.FrameLayout", Bounds(0, 0, w, screen.bottom),
                    resource_id=f"{SYSTEMUI}:id/notification_panel", children=children)
    root.set_package(SYSTEMUI)
    return root


def dumpsys_notification(system: "AndroidSystem") -> str:
    """`dumpsys notification --noredact`: the record list with each one's extras."""
    out = ["Current Notification Manager state:", f"  Notification List ({len(system.notifications.items)}):"]
    for note in system.notifications.items:
        out += [
            f"    NotificationRecord(0x{note.id * 7919 & 0xFFFFFFF:08x}: pkg={note.package} user=UserHandle{{0}} "
            f"id={note.id} tag=null importance=3 key={note.key}: Notification(channel={note.channel} "
            "shortcut=null contentView=null vibrate=null sound=null defaults=0x0 flags=0x10 "
            "color=0x00000000 vis=PRIVATE))",
            f"      pkg={note.package}",
            f"      key={note.key}",
            f"      postTime={int(note.when * 1000)}",
            "      extras={",
            f"        android.title=String ({note.title})",
            f"        android.text=String ({note.text})",
            "      }",
        ]
    return "\n".join(out) + "\n"
