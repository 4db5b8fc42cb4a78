"""What an action would do to the phone, judged before it is done: the sensitive effects of
touches, key presses and shell commands, declared per app element, app screen, intent and setting.

The safety gate asks about effects, not about tools or button words, so every route to one
effect — an app tool, a tap on the element, Enter in a field, a fired intent, a composite —
meets the same decision. Effects are keyed by what identifies them on a real Android phone:
(package, resource-id) for buttons, (package, activity) for screens whose switches are
security settings, the intent action, the `settings` key. These come from the app and the
system, never from text the screen shows (which anyone who can send a message can plant); a
button's label is only a fallback signal where the app has not described the element, and it
can only add a confirmation, never remove one.

Opening a page or a draft is no effect (``SENDTO`` with a body opens a compose screen; the Send
button sends). Long presses and swipes only open menus or scroll; the tap on the menu's Delete
is the effect.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from device_farm.hierarchy import Element, Screen
from planner_runtime.harness.safety import Sensitivity


@dataclass(frozen=True)
class Effect:
    """A sensitive effect: its category (what a policy allows) and what it is, for the log."""

    category: Sensitivity
    what: str


@dataclass(frozen=True)
class AppEffects:
    """The sensitive effects of one app, by what the app itself names."""

    elements: Mapping[str, Effect] = field(default_factory=dict)  # resource-id → tapping it
    submits: Mapping[str, Effect] = field(default_factory=dict)  # text field resource-id → Enter in it
    screens: Mapping[str, Effect] = field(default_factory=dict)  # activity ("*": any) → any switch or option on it


def _send(what: str) -> Effect:
    return Effect(Sensitivity.send, what)


SECURITY_PAGE = "change a security or privacy setting"
_SETTINGS = "com.android.settings.Settings$"
_GRANT = Effect(Sensitivity.security, "grant an app a permission")
# The runtime permission prompt's grant buttons. Both builds of the controller keep the AOSP
# resource package in their ids; its switches and options (the per-app pages) are security too.
_PERMISSIONS = AppEffects(
    elements={f"{owner}:id/{button}": _GRANT
              for owner in ("com.android.permissioncontroller", "com.google.android.permissioncontroller")
              for button in ("permission_allow_button", "permission_allow_foreground_only_button",
                             "permission_allow_one_time_button", "permission_allow_always_button",
                             "permission_allow_all_button", "permission_allow_selected_button")},
    screens={"*": Effect(Sensitivity.security, "change an app's permission")})
_CALL = Effect(Sensitivity.call, "place a phone call")

APP_EFFECTS: dict[str, AppEffects] = {
    "com.android.settings": AppEffects(screens={
        _SETTINGS + "LocationSettingsActivity": Effect(Sensitivity.security, "turn location on or off"),
        _SETTINGS + "SecurityDashboardActivity": Effect(Sensitivity.security, "change the screen lock"),
        _SETTINGS + "SecuritySettingsActivity": Effect(Sensitivity.security, "change the screen lock"),
        "com.android.settings.applications.InstalledAppDetails": Effect(Sensitivity.security, "change an app's permission"),
        _SETTINGS + "AppPermissionsActivity": Effect(Sensitivity.security, "change an app's permission"),
        _SETTINGS + "DevelopmentSettingsDashboardActivity": Effect(Sensitivity.security, "change a developer option"),
        _SETTINGS + "VpnSettingsActivity": Effect(Sensitivity.security, "change the VPN"),
        _SETTINGS + "ManageExternalSourcesActivity": Effect(Sensitivity.security, "allow installs from unknown sources"),
        _SETTINGS + "DeviceAdminSettingsActivity": Effect(Sensitivity.security, "change a device admin app"),
    }),
    "com.google.android.permissioncontroller": _PERMISSIONS,
    "com.android.permissioncontroller": _PERMISSIONS,
    "com.google.android.apps.messaging": AppEffects(
        elements={"com.google.android.apps.messaging:id/send_message_button_icon": _send("send the text message")},
        submits={"com.google.android.apps.messaging:id/compose_message_text": _send("send the text message (Enter sends)")}),
    "com.google.android.gm": AppEffects(elements={"com.google.android.gm:id/send": _send("send the email")}),
    "com.google.android.dialer": AppEffects(elements={
        "com.google.android.dialer:id/dialpad_voice_call_button": _CALL,
        "com.google.android.dialer:id/call_button": _CALL}),
    "com.paypal.android.p2pmobile": AppEffects(elements={
        "com.paypal.android.p2pmobile:id/send_button": Effect(Sensitivity.pay, "send money")}),
    "com.amazon.mShop.android.shopping": AppEffects(elements={
        "com.amazon.mShop.android.shopping:id/placeYourOrder": Effect(Sensitivity.purchase, "place the order")}),
    "com.dd.doordash": AppEffects(elements={
        "com.dd.doordash:id/place_order_button": Effect(Sensitivity.purchase, "place the food order")}),
    "com.booking": AppEffects(elements={
        "com.booking:id/action_button": Effect(Sensitivity.purchase, "complete the booking")}),
    "com.google.android.keep": AppEffects(elements={
        "com.google.android.keep:id/menu_delete": Effect(Sensitivity.delete, "delete the note")}),
    # the Files app's one dialog is the delete confirmation; its positive button deletes
    "com.google.android.apps.nbu.files": AppEffects(elements={
        "android:id/button1": Effect(Sensitivity.delete, "delete the file")}),
    # described apps with no sensitive element of their own: their framework buttons (menus,
    # dialogs) are still judged by label
    "com.google.android.contacts": AppEffects(),
    "com.google.android.deskclock": AppEffects(),
    "com.google.android.calendar": AppEffects(),
    "com.google.android.apps.maps": AppEffects(),
    "com.google.android.apps.youtube.music": AppEffects(),
}

# Settings rows that are security switches on any page (a real phone shows several of these
# inside SubSettings, whose activity says nothing about the page). Positive only: a match adds
# a confirmation.
SECURITY_SWITCH_TITLES = frozenset({
    "Use location", "Location", "Screen lock", "Use developer options", "Developer options", "USB debugging",
    "Wireless debugging", "Allow from this source", "Always-on VPN", "Use VPN", "Install unknown apps",
    "Smart Lock", "Face Unlock", "Fingerprint Unlock",
})

INTENTS: dict[str, Effect] = {
    "android.intent.action.CALL": _CALL,
    "android.intent.action.CALL_PRIVILEGED": _CALL,
    "android.intent.action.CALL_EMERGENCY": _CALL,
    "android.intent.action.DELETE": Effect(Sensitivity.delete, "uninstall an app"),
    "android.intent.action.UNINSTALL_PACKAGE": Effect(Sensitivity.delete, "uninstall an app"),
    "android.intent.action.INSTALL_PACKAGE": Effect(Sensitivity.install, "install an app"),
    "android.app.action.ADD_DEVICE_ADMIN": Effect(Sensitivity.security, "add a device admin app"),
}

SECURE_SETTINGS: frozenset[tuple[str, str]] = frozenset({
    ("secure", "location_mode"), ("secure", "location_providers_allowed"), ("secure", "lockscreen.disabled"),
    ("global", "adb_enabled"), ("global", "development_settings_enabled"), ("secure", "install_non_market_apps"),
    ("global", "package_verifier_enable"), ("global", "always_on_vpn_app"), ("secure", "always_on_vpn_app"),
})

# The fallback for elements no app table describes, as a person would read the button.
_BUTTON_LABELS: tuple[tuple[Sensitivity, re.Pattern[str]], ...] = (
    (Sensitivity.pay, re.compile(r"\b(pay|send money|transfer|send now)\b")),
    (Sensitivity.purchase, re.compile(r"\b(buy now|place (your )?order|purchase|checkout|check out|complete booking|reserve|book now|confirm booking)\b")),
    (Sensitivity.send, re.compile(r"\b(send|send sms|send message|forward|share)\b")),
    (Sensitivity.call, re.compile(r"\b(call|dial|start call|voice call)\b(?! log| history)|dial_button|call_button")),
    (Sensitivity.delete, re.compile(r"\b(delete|remove|erase|clear data|uninstall)\b")),
    (Sensitivity.install, re.compile(r"\b(install)\b")),
)
_TOGGLE_ROLES = ("Switch", "SwitchCompat", "SwitchMaterial", "MaterialSwitch", "CheckBox", "RadioButton", "ToggleButton")
TAP_SLOP = 32  # a swipe shorter than this (px) is a tap


def button_sensitivity(label: str, resource_id: str = "") -> Sensitivity | None:
    """The sensitive action a button performs by its label and resource-id words. Only short
    labels count: a message or list row that merely mentions "send" is content, not a button."""
    short = label if len(label) <= 24 and len(label.split()) <= 3 else ""
    text = f"{short} {resource_id.rpartition('/')[2].replace('_', ' ')} {resource_id}".lower()
    return next((category for category, pattern in _BUTTON_LABELS if pattern.search(text)), None)


def _contains(e: Element, x: int, y: int) -> bool:
    b = e.bounds
    return b.left <= x < b.right and b.top <= y < b.bottom


def _is_toggle(e: Element) -> bool:
    return e.checkable or e.role in _TOGGLE_ROLES


def _toggle_row(screen: Screen, x: int, y: int) -> Element | None:
    """The row a touch at (x, y) toggles: a switch/option under the finger, or a clickable
    element under the finger that holds one (a Settings row flips its switch)."""
    under = [e for e in screen.elements if _contains(e, x, y)]
    if any(_is_toggle(e) for e in under):
        return next(e for e in reversed(under) if _is_toggle(e))
    toggles = [t for t in screen.elements if _is_toggle(t)]
    for holder in reversed([e for e in under if e.clickable]):
        if any(_contains(holder, *t.bounds.center) for t in toggles):
            return holder
    return None


def _row_titles(screen: Screen, row: Element) -> set[str]:
    top, bottom = row.bounds.top - 80, row.bounds.bottom + 80
    return {e.text for e in screen.elements if e.text and top <= e.bounds.center[1] <= bottom}


def touch_effect(screen: Screen, x: int, y: int, activity: Callable[[], str]) -> Effect | None:
    """The sensitive effect of a tap at (x, y) on ``screen``; ``activity`` names the foreground
    activity (asked only for apps whose screens are declared)."""
    under = [e for e in screen.elements if _contains(e, x, y)]
    app = APP_EFFECTS.get(screen.package)
    if app is None:  # an app nobody described: its buttons' words are all there is
        for e in reversed(under):
            category = button_sensitivity(e.text or e.description, e.resource_id)
            if category is not None:
                return Effect(category, f"{category.value} (a button labelled {(e.text or e.description or e.resource_id)[:40]!r})")
        return None
    for e in reversed(under):
        if e.resource_id in app.elements:
            return app.elements[e.resource_id]
    if app.screens:
        row = _toggle_row(screen, x, y)
        if row is not None:
            page = app.screens.get("*") or app.screens.get(activity())
            if page is not None:
                return page
            if screen.package == "com.android.settings" and _row_titles(screen, row) & SECURITY_SWITCH_TITLES:
                return Effect(Sensitivity.security, SECURITY_PAGE)
    for e in reversed(under):  # framework buttons (menus, dialogs) and unnamed ones, by label
        if not e.resource_id or e.resource_id.startswith("android:id/"):
            category = button_sensitivity(e.text or e.description)
            if category is not None:
                return Effect(category, f"{category.value} (a button labelled {(e.text or e.description)[:40]!r})")
    return None


def submit_effect(screen: Screen, field_id: str | None) -> Effect | None:
    """The sensitive effect of Enter (the keyboard's action key) in the focused text field."""
    app = APP_EFFECTS.get(screen.package)
    focused = next((e.resource_id for e in screen.elements if e.focused and e.editable), None) or field_id
    if app is None or not focused:
        return None
    return app.submits.get(focused)


def push_effect(path: str, exists: Callable[[], bool]) -> Effect | None:
    """The sensitive effect of writing a file to ``path`` (adb's push): replacing a file that is
    there loses what it held, as ``rm`` would; a new file changes nothing anyone had.
    ``exists`` says whether ``path`` is there now."""
    return Effect(Sensitivity.delete, f"overwrite {path}") if exists() else None


def intent_effect(action: str | None) -> Effect | None:
    return INTENTS.get(action or "")


def _am_action(args: Sequence[str]) -> str | None:
    for flag, value in zip(args, args[1:]):
        if flag == "-a":
            return value
    return None


def command_effect(command: str | Sequence[str]) -> Effect | None:
    """The sensitive effect of a shell command, for the commands tools and scripts use to
    change a phone (``am start``, ``settings put``, ``pm``, ``content delete``, ``rm``...)."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        parts: list[list[str]] = [[]]
        for word in words:  # `a; b && c | d`: each command on its own
            if word in (";", "&&", "||", "|"):
                parts.append([])
            else:
                parts[-1].append(word)
        return next((e for part in parts if part for e in [_one_command(part)] if e is not None), None)
    return _one_command(list(command))


def _one_command(argv: list[str]) -> Effect | None:
    if argv and argv[0] in ("sh", "su") and "-c" in argv:
        return command_effect(" ".join(argv[argv.index("-c") + 1:]))
    name, rest = (argv[0].rpartition("/")[2], argv[1:]) if argv else ("", [])
    verb = rest[0] if rest else ""
    if name == "am" and verb in ("start", "start-activity", "startservice", "start-foreground-service"):
        return intent_effect(_am_action(rest[1:]))
    if name == "settings" and verb in ("put", "delete", "reset") and len(rest) >= 3 and (rest[1], rest[2]) in SECURE_SETTINGS:
        return Effect(Sensitivity.security, f"change the {rest[2]} setting")
    if name == "pm" and verb in ("grant", "revoke", "reset-permissions"):
        return Effect(Sensitivity.security, "change an app's permission")
    if name == "pm" and verb in ("uninstall", "clear"):
        return Effect(Sensitivity.delete, f"{verb} an app's data" if verb == "clear" else "uninstall an app")
    if (name == "pm" and verb == "install") or (name == "cmd" and rest[:2] == ["package", "install"]):
        return Effect(Sensitivity.install, "install an app")
    if name == "cmd" and verb == "location":
        return Effect(Sensitivity.security, "turn location on or off")
    if name == "content" and verb == "delete":
        uri = rest[rest.index("--uri") + 1] if "--uri" in rest[:-1] else "?"
        return Effect(Sensitivity.delete, f"delete rows of {uri}")
    if name in ("rm", "rmdir", "unlink"):
        return Effect(Sensitivity.delete, "delete files")
    if name == "input" and verb == "keyevent" and any(k in ("5", "CALL", "KEYCODE_CALL") for k in rest[1:]):
        return _CALL
    return None
