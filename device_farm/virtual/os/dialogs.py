"""Windows that appear over the app on their own: ANR and crash dialogs (package `android`),
runtime permission prompts (`com.google.android.permissioncontroller`) and an app's pop-ups.

A `Dialog` is a frozen record kept on the system (so snapshots keep it); its window is
drawn by `ui.windows.dialog_window` (whose buttons call `AndroidSystem.answer_dialog`), and
`window_title` is the name `dumpsys window` shows for it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
