"""Settings tools: switches flipped the way a person does it — the Settings page opened with
its public `android.settings.*` intent, the switch on the labelled row tapped — and the result
read back from Android's `settings` tables, so they work on a real phone and the virtual one.

Brightness is written to `settings system screen_brightness` (0–255) directly, as the
brightness slider does. Location, the screen lock and app permissions are security and privacy
settings: those tools go through the safety gate (``Sensitivity.security``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from device_farm.android import Intent, get_setting, put_setting, start_activity
from device_farm.hierarchy import Element, Screen
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named, resolve_package
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen

APP = app_named("Settings")


@dataclass(frozen=True)
class Switchable:
    action: str
    labels: tuple[str, ...]  # the row's title on Pixel/AOSP Settings
    namespace: str
    key: str
    on: str
    default: str


SWITCHES: dict[str, Switchable] = {
    "wifi": Switchable("android.settings.WIFI_SETTINGS", ("Wi-Fi", "Wi\u2011Fi", "Use Wi-Fi"), "global", "wifi_on", "1", "1"),
    "mobile_data": Switchable("android.settings.WIRELESS_SETTINGS", ("Mobile data",), "global", "mobile_data", "1", "1"),
    "airplane_mode": Switchable("android.settings.AIRPLANE_MODE_SETTINGS", ("Airplane mode",), "global", "airplane_mode_on", "1", "0"),
    "bluetooth": Switchable("android.settings.BLUETOOTH_SETTINGS", ("Use Bluetooth", "Bluetooth"), "global", "bluetooth_on", "1", "1"),
    "do_not_disturb": Switchable("android.settings.ZEN_MODE_SETTINGS", ("Do Not Disturb",), "global", "zen_mode", "1", "0"),
    "dark_theme": Switchable("android.settings.DISPLAY_SETTINGS", ("Dark theme",), "secure", "ui_night_mode", "2", "1"),
    "location": Switchable("android.settings.LOCATION_SOURCE_SETTINGS", ("Use location",), "secure", "location_mode", "3", "3"),
    "screen_lock": Switchable("android.settings.SECURITY_SETTINGS", ("Screen lock",), "secure", "lockscreen.disabled", "0", "0"),
}


def row_switch(screen: Screen, labels: tuple[str, ...]) -> Element | None:
    """The Switch on the same row as a text in ``labels``."""
    for anchor in (e for e in screen.elements if e.text in labels):
        y = anchor.bounds.center[1]
        row = [e for e in screen.elements if e.role == "Switch" and e.bounds.top - 80 <= y <= e.bounds.bottom + 80]
        if row:
            return min(row, key=lambda e: abs(e.bounds.center[1] - y))
    return None


def is_on(ctx: ToolContext, s: Switchable) -> bool:
    value = get_setting(ctx.device, s.namespace, s.key)
    return (value if value is not None else s.default) == s.on


def flip_switch(ctx: ToolContext, name: str, on: bool) -> ToolResult:
    s = SWITCHES[name]
    if is_on(ctx, s) == on:
        return ToolResult(result={"setting": name, "on": on, "changed": False})
    start_activity(ctx.device, Intent(action=s.action))
    screen = wait_for_screen(ctx, lambda sc: row_switch(sc, s.labels) is not None)
    target = row_switch(screen, s.labels)
    if target is None:
        raise ToolFailure(ErrorCode.element_not_found, f"the Settings page for {name} shows no {s.labels[0]!r} switch")
    ctx.device.click(*target.bounds.center)
    ctx.observe()
    if is_on(ctx, s) != on:
        raise ToolFailure(ErrorCode.action_failed, f"{name} is still {'off' if on else 'on'} after tapping its switch")
    return ToolResult(result={"setting": name, "on": on, "changed": True}, observe=True)


class ToggleSettingArgs(ToolArgs):
    setting: Literal["wifi", "mobile_data", "airplane_mode", "bluetooth", "do_not_disturb", "dark_theme"] = Field(
        description="Which switch")
    on: bool = Field(description="true to turn it on, false to turn it off")


class ToggleSetting(AppTool):
    name = "toggle_setting"
    app = APP.name
    description = "Turn Wi-Fi, mobile data, airplane mode, Bluetooth, Do Not Disturb or dark theme on or off in Settings."
    Args = ToggleSettingArgs

    def act(self, ctx: ToolContext, args: ToggleSettingArgs, package: str) -> ToolResult:
        return flip_switch(ctx, args.setting, args.on)


class SetLocationArgs(ToolArgs):
    on: bool = Field(description="true to turn location on, false to turn it off")


class SetLocation(AppTool):
    name = "set_location"
    app = APP.name
    description = "Turn the phone's location on or off (a privacy setting: asks the user first)."
    Args = SetLocationArgs
    sensitive = Sensitivity.security

    def act(self, ctx: ToolContext, args: SetLocationArgs, package: str) -> ToolResult:
        return flip_switch(ctx, "location", args.on)


class SetScreenLockArgs(ToolArgs):
    on: bool = Field(description="true to keep the phone locked behind its PIN, false to remove the screen lock")


class SetScreenLock(AppTool):
    name = "set_screen_lock"
    app = APP.name
    description = "Turn the screen lock (PIN) on or off (a security setting: asks the user first)."
    Args = SetScreenLockArgs
    sensitive = Sensitivity.security

    def act(self, ctx: ToolContext, args: SetScreenLockArgs, package: str) -> ToolResult:
        return flip_switch(ctx, "screen_lock", args.on)


class SetBrightnessArgs(ToolArgs):
    percent: int = Field(ge=0, le=100, description="Screen brightness in percent, 0-100")


class SetBrightness(AppTool):
    name = "set_brightness"
    app = APP.name
    description = "Set the screen brightness (percent); turns adaptive brightness off so the level stays."
    Args = SetBrightnessArgs

    def act(self, ctx: ToolContext, args: SetBrightnessArgs, package: str) -> ToolResult:
        level = round(args.percent * 255 / 100)
        put_setting(ctx.device, "system", "screen_brightness_mode", 0)
        put_setting(ctx.device, "system", "screen_brightness", level)
        return ToolResult(result={"percent": args.percent, "screen_brightness": level})


PERMISSIONS = {
    "camera": "android.permission.CAMERA", "contacts": "android.permission.READ_CONTACTS",
    "location": "android.permission.ACCESS_FINE_LOCATION", "microphone": "android.permission.RECORD_AUDIO",
    "notifications": "android.permission.POST_NOTIFICATIONS", "phone": "android.permission.CALL_PHONE",
    "sms": "android.permission.SEND_SMS", "photos": "android.permission.READ_MEDIA_IMAGES",
    "music": "android.permission.READ_MEDIA_AUDIO",
}


class SetAppPermissionArgs(ToolArgs):
    app: str = Field(min_length=1, description="App name such as 'Maps', or a package name")
    permission: Literal["camera", "contacts", "location", "microphone", "notifications", "phone", "sms", "photos",
                        "music"] = Field(description="Permission group")
    allow: bool = Field(description="true to allow, false to take the permission away")


class SetAppPermission(AppTool):
    name = "set_app_permission"
    app = APP.name
    description = "Allow or deny an app a runtime permission such as camera or location (asks the user first)."
    Args = SetAppPermissionArgs
    sensitive = Sensitivity.security

    def act(self, ctx: ToolContext, args: SetAppPermissionArgs, package: str) -> ToolResult:
        target = resolve_package(args.app, ctx.installed())  # the app whose permission changes
        if target is None:
            raise ToolFailure(ErrorCode.app_not_installed, f"no {args.app} app is installed on this phone")
        permission = PERMISSIONS[args.permission]
        result = ctx.device.shell(["pm", "grant" if args.allow else "revoke", target, permission])
        if not result.ok:
            raise ToolFailure(ErrorCode.action_failed, f"pm refused: {result.output.strip()[:200]}")
        return ToolResult(result={"app": target, "permission": permission, "allowed": args.allow})


TOOLS = (ToggleSetting, SetLocation, SetScreenLock, SetBrightness, SetAppPermission)
