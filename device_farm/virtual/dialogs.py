"""Windows that appear over the app on their own: ANR and crash dialogs (package `android`),
runtime permission prompts (`com.google.android.permissioncontroller`) and an app's pop-ups.

A `Dialog` is a frozen record kept on the system (so snapshots keep it); `dialog_views`
builds its window with the resource-ids and texts Android 14 uses, and `window_title` the
name `dumpsys window` shows for it. Buttons call `AndroidSystem.answer_dialog`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from device_farm.virtual.apps.widgets import button, group, text_view
from device_farm.virtual.ui import Bounds, ViewNode

if TYPE_CHECKING:
    from device_farm.virtual.system import AndroidSystem

PERMISSION_CONTROLLER = "com.google.android.permissioncontroller"
GRANT_ACTIVITY = "com.android.permissioncontroller.permission.ui.GrantPermissionsActivity"
PERMISSION_GROUPS = {
    "android.permission.READ_CONTACTS": "your contacts", "android.permission.WRITE_CONTACTS": "your contacts",
    "android.permission.CALL_PHONE": "make and manage phone calls",
    "android.permission.READ_CALENDAR": "your calendar", "android.permission.CAMERA": "take pictures and record video",
    "android.permission.RECORD_AUDIO": "record audio", "android.permission.SEND_SMS": "send and view SMS messages",
    "android.permission.READ_SMS": "send and view SMS messages",
    "android.permission.ACCESS_FINE_LOCATION": "this device's location",
    "android.permission.POST_NOTIFICATIONS": "send you notifications",
}


@dataclass(frozen=True)
class Dialog:
    """One dialog on screen. `kind`: anr | crash | permission | popup."""

    kind: str
    package: str
    """The app it is about (whose process hangs, crashed, asks, or shows the pop-up)."""
    label: str
    title: str = ""
    message: str = ""
    buttons: tuple[str, ...] = ()
    permission: str = ""

    @property
    def window_package(self) -> str:
        if self.kind in ("anr", "crash"):
            return "android"
        if self.kind == "permission":
            return PERMISSION_CONTROLLER
        return self.package

    @property
    def modal_over_home(self) -> bool:
        """System error dialogs stay when the user goes home; an app's windows do not."""
        return self.kind in ("anr", "crash")


def anr(package: str, label: str) -> Dialog:
    return Dialog("anr", package, label, f"{label} isn't responding", buttons=("Close app", "Wait"))


def crash(package: str, label: str) -> Dialog:
    return Dialog("crash", package, label, f"{label} keeps stopping", buttons=("App info", "Close app"))


def permission(package: str, label: str, name: str) -> Dialog:
    what = PERMISSION_GROUPS.get(name, name.rsplit(".", 1)[-1].replace("_", " ").lower())
    return Dialog("permission", package, label, f"Allow {label} to access {what}?",
                  buttons=("Allow", "Don't allow"), permission=name)


def popup(package: str, label: str, title: str, message: str, buttons: tuple[str, ...]) -> Dialog:
    return Dialog("popup", package, label, title, message, tuple(buttons) or ("OK",))


def window_title(dialog: Dialog) -> str:
    """What `dumpsys window` names the focused window."""
    if dialog.kind == "anr":
        return f"Application Not Responding: {dialog.package}"
    if dialog.kind == "crash":
        return f"Application Error: {dialog.package}"
    if dialog.kind == "permission":
        return f"{PERMISSION_CONTROLLER}/{GRANT_ACTIVITY}"
    return f"{dialog.package}/{dialog.package}.AlertDialog"


_BUTTON_IDS = {
    ("anr", "Close app"): "android:id/aerr_close", ("anr", "Wait"): "android:id/aerr_wait",
    ("crash", "App info"): "android:id/aerr_app_info", ("crash", "Close app"): "android:id/aerr_close",
    ("permission", "Allow"): "com.android.permissioncontroller:id/permission_allow_button",
    ("permission", "Don't allow"): "com.android.permissioncontroller:id/permission_deny_button",
}


def dialog_views(system: "AndroidSystem", dialog: Dialog, screen: Bounds) -> ViewNode:
    """The dialog's window: a scrim over the screen and the panel in the middle."""
    w = screen.right
    answer: Callable[[str], Callable[[], None]] = (
        lambda text: lambda: system.answer_dialog(dialog, text))
    rows: list[ViewNode] = []
    top = 820
    if dialog.kind == "permission":
        rows.append(text_view(Bounds(150, top, w - 150, top + 200), dialog.title,
                              "com.android.permissioncontroller:id/permission_message"))
        top += 240
        for text in dialog.buttons:
            rows.append(button(Bounds(150, top, w - 150, top + 130), text,
                               _BUTTON_IDS[(dialog.kind, text)], on_click=answer(text)))
            top += 150
        panel_id = "com.android.permissioncontroller:id/grant_dialog"
    elif dialog.kind in ("anr", "crash"):
        rows.append(text_view(Bounds(150, top, w - 150, top + 160), dialog.title, "android:id/alertTitle"))
        top += 190
        for text in dialog.buttons:
            rows.append(text_view(Bounds(150, top, w - 150, top + 140), text,
                                  _BUTTON_IDS[(dialog.kind, text)], on_click=answer(text)))
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
                               text, ids[i % 3], on_click=answer(text)))
        top += 150
        panel_id = "android:id/parentPanel"
    panel = group(Bounds(90, 780, w - 90, top + 40), rows, panel_id, cls="android.widget.FrameLayout")
    scrim = group(Bounds(0, 0, w, screen.bottom), [])
    scrim.clickable = True  # swallows taps outside the panel: these dialogs are modal
    root = ViewNode("android.widget.FrameLayout", Bounds(0, 0, w, screen.bottom), children=[scrim, panel])
    root.set_package(dialog.window_package)
    return root
