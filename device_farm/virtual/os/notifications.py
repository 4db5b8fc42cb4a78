"""Posted notifications and `dumpsys notification`.

Notifications are frozen records kept on the system in posting order (so snapshots keep
them). The shade that shows them is drawn by `ui.windows.shade_window`: a window of
`com.android.systemui` listing the newest first, where tapping one opens its app and removes
it and "Clear all" removes them all. The dump follows Android 14's
`dumpsys notification --noredact` record lines, with title and text among the extras.
"""

from __future__ import annotations

from dataclasses import dataclass


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


def dumpsys_notification(posted: NotificationList) -> str:
    """`dumpsys notification --noredact`: the record list with each one's extras."""
    out = ["Current Notification Manager state:", f"  Notification List ({len(posted.items)}):"]
    for note in posted.items:
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
