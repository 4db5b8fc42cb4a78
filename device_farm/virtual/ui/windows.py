"""The windows the system draws over the app: a dialog (ANR, crash, permission prompt, an
app's pop-up) and the expanded notification shade, with the resource-ids, texts and window
packages Android 14 uses.

They are built from plain values and callbacks (what a button or a row does is the caller's
business), so the system that keeps the dialog and notification records and the apps that
post them both sit above this module.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, TypeVar

from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, group, text_view

SYSTEMUI = "com.android.systemui"
ROW_HEIGHT = 230
SHADE_TOP = 300

_BUTTON_IDS = {
    ("anr", "Close app"): "android:id/aerr_close", ("anr", "Wait"): "android:id/aerr_wait",
    ("crash", "App info"): "android:id/aerr_app_info", ("crash", "Close app"): "android:id/aerr_close",
    ("permission", "Allow"): "com.android.permissioncontroller:id/permission_allow_button",
    ("permission", "Don't allow"): "com.android.permissioncontroller:id/permission_deny_button",
}


class DialogContent(Protocol):
    """What a dialog window shows (the system's dialog record has these fields)."""

    @property
    def kind(self) -> str: ...  # anr | crash | permission | popup
    @property
    def title(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def buttons(self) -> tuple[str, ...]: ...
    @property
    def window_package(self) -> str: ...


class ShadeEntry(Protocol):
    """What a notification row shows (the system's notification record has these fields)."""

    @property
    def package(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...


EntryT = TypeVar("EntryT", bound=ShadeEntry)


def dialog_window(dialog: DialogContent, screen: Bounds, answer: Callable[[str], None]) -> ViewNode:
    """The dialog's window: a scrim over the screen and the panel in the middle. A button
    calls ``answer`` with its text."""
    w = screen.right
    on: Callable[[str], Callable[[], None]] = lambda text: lambda: answer(text)
    rows: list[ViewNode] = []
    top = 820
    if dialog.kind == "permission":
        rows.append(text_view(Bounds(150, top, w - 150, top + 200), dialog.title,
                              "com.android.permissioncontroller:id/permission_message"))
        top += 240
        for text in dialog.buttons:
            rows.append(button(Bounds(150, top, w - 150, top + 130), text,
                               _BUTTON_IDS[(dialog.kind, text)], on_click=on(text)))
            top += 150
        panel_id = "com.android.permissioncontroller:id/grant_dialog"
    elif dialog.kind in ("anr", "crash"):
        rows.append(text_view(Bounds(150, top, w - 150, top + 160), dialog.title, "android:id/alertTitle"))
        top += 190
        for text in dialog.buttons:
            rows.append(text_view(Bounds(150, top, w - 150, top + 140), text,
                                  _BUTTON_IDS[(dialog.kind, text)], on_click=on(text)))
            top += 150
        panel_id = "android:id/parentPanel"
    else:
        rows.append(text_view(Bounds(150, top, w - 150, top + 120), dialog.title, "android:id/alertTitle"))
        rows.append(text_view(Bounds(150, top + 140, w - 150, top + 340), dialog.message, "android:id/message"))
        top += 400
        ids = ("android:id/button2", "android:id/button1", "android:id/button3")
        width = (w - 300) // max(1, len(dialog.buttons))
        for i, text in enumerate(dialog.buttons):
            rows.append(button(Bounds(150 + i * width, top, 150 + (i + 1) * width - 20, top + 130),
                               text, ids[i % 3], on_click=on(text)))
        top += 150
        panel_id = "android:id/parentPanel"
    panel = group(Bounds(90, 780, w - 90, top + 40), rows, panel_id, cls="android.widget.FrameLayout")
    scrim = group(Bounds(0, 0, w, screen.bottom), [])
    scrim.clickable = True  # swallows taps outside the panel: these dialogs are modal
    root = ViewNode("android.widget.FrameLayout", Bounds(0, 0, w, screen.bottom), children=[scrim, panel])
    root.set_package(dialog.window_package)
    return root


def shade_window(notes: Sequence[EntryT], screen: Bounds, label_of: Callable[[str], str],
                 open_note: Callable[[EntryT], None], clear_all: Callable[[], None]) -> ViewNode:
    """The expanded shade over ``notes`` (oldest first): newest first, as many as fit, then
    "Clear all". Tapping a row calls ``open_note`` with it."""
    w = screen.right
    rows: list[ViewNode] = []
    top = SHADE_TOP
    newest_first = list(reversed(notes))
    bottom = screen.bottom - 200
    for note in newest_first:
        if top + ROW_HEIGHT > bottom:
            break
        label = label_of(note.package)
        row = group(Bounds(30, top, w - 30, top + ROW_HEIGHT - 10), [
            text_view(Bounds(80, top + 10, w - 80, top + 60), label, "android:id/app_name_text"),
            text_view(Bounds(80, top + 65, w - 80, top + 135), note.title, "android:id/title"),
            text_view(Bounds(80, top + 140, w - 80, top + 210), note.text, "android:id/text"),
        ], f"{SYSTEMUI}:id/expandableNotificationRow", cls="android.widget.FrameLayout",
            on_click=lambda note=note: open_note(note))
        row.content_desc = f"{label} notification: {note.title}"
        rows.append(row)
        top += ROW_HEIGHT
    children: list[ViewNode] = [
        text_view(Bounds(60, 150, w - 60, 260),
                  f"{len(newest_first)} notifications" if newest_first else "No notifications",
                  f"{SYSTEMUI}:id/header_label"),
        group(Bounds(0, SHADE_TOP, w, bottom), rows, f"{SYSTEMUI}:id/notification_stack_scroller",
              scrollable=len(rows) < len(newest_first)),
    ]
    if newest_first:
        children.append(button(Bounds(w - 360, bottom + 40, w - 60, bottom + 160), "Clear all",
                               f"{SYSTEMUI}:id/dismiss_text", on_click=clear_all))
    root = ViewNode("android.widget.FrameLayout", Bounds(0, 0, w, screen.bottom),
                    resource_id=f"{SYSTEMUI}:id/notification_panel", children=children)
    root.set_package(SYSTEMUI)
    return root
