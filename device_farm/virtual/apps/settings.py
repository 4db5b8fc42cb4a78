"""Settings (com.android.settings): the homepage, pages of switches over the phone's own
`settings` tables (so `settings get/put` and `svc` see what the UI shows and the UI shows
what they write), the apps list and each app's info page with its runtime permissions
(the same state `pm grant/revoke` and `dumpsys package` use).

Intents: `android.settings.WIFI_SETTINGS`, `WIRELESS_SETTINGS`, `AIRPLANE_MODE_SETTINGS`,
`BLUETOOTH_SETTINGS`, `DISPLAY_SETTINGS`, `ZEN_MODE_SETTINGS`, `LOCATION_SOURCE_SETTINGS`,
`SECURITY_SETTINGS`, `APPLICATION_SETTINGS`/`MANAGE_APPLICATIONS_SETTINGS` and
`APPLICATION_DETAILS_SETTINGS` with `package:<name>` data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.intents import ComponentName, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import group, row_list, scrolled, switch, text_view

PACKAGE = "com.android.settings"
HOME = "com.android.settings.Settings"
NETWORK = "com.android.settings.Settings$NetworkDashboardActivity"
WIFI = "com.android.settings.Settings$WifiSettingsActivity"
BLUETOOTH = "com.android.settings.Settings$ConnectedDeviceDashboardActivity"
DISPLAY = "com.android.settings.Settings$DisplaySettingsActivity"
ZEN = "com.android.settings.Settings$ZenModeSettingsActivity"
LOCATION = "com.android.settings.Settings$LocationSettingsActivity"
SECURITY = "com.android.settings.Settings$SecurityDashboardActivity"
APPS = "com.android.settings.Settings$ManageApplicationsActivity"
APP_INFO = "com.android.settings.applications.InstalledAppDetails"
SUB_SETTINGS = "com.android.settings.SubSettings"
ACTIONS = {
    "android.settings.SETTINGS": HOME, "android.settings.WIFI_SETTINGS": WIFI,
    "android.settings.WIRELESS_SETTINGS": NETWORK, "android.settings.AIRPLANE_MODE_SETTINGS": NETWORK,
    "android.settings.BLUETOOTH_SETTINGS": BLUETOOTH, "android.settings.DISPLAY_SETTINGS": DISPLAY,
    "android.settings.ZEN_MODE_SETTINGS": ZEN, "android.settings.LOCATION_SOURCE_SETTINGS": LOCATION,
    "android.settings.SECURITY_SETTINGS": SECURITY, "android.settings.APPLICATION_SETTINGS": APPS,
    "android.settings.MANAGE_APPLICATIONS_SETTINGS": APPS,
    "android.settings.APPLICATION_DETAILS_SETTINGS": APP_INFO,
}
ROW_HEIGHT = 200
PERMISSION_GROUPS = (
    ("Camera", "android.permission.CAMERA"), ("Contacts", "android.permission.READ_CONTACTS"),
    ("Location", "android.permission.ACCESS_FINE_LOCATION"), ("Microphone", "android.permission.RECORD_AUDIO"),
    ("Music and audio", "android.permission.READ_MEDIA_AUDIO"),
    ("Notifications", "android.permission.POST_NOTIFICATIONS"), ("Phone", "android.permission.CALL_PHONE"),
    ("Photos and videos", "android.permission.READ_MEDIA_IMAGES"), ("SMS", "android.permission.SEND_SMS"),
)


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


@dataclass(frozen=True)
class Toggle:
    """A switch row over one `settings` key."""

    title: str
    namespace: str
    key: str
    default: str
    on: str = "1"
    off: str = "0"
    on_summary: str = "On"
    off_summary: str = "Off"


@dataclass(frozen=True)
class Page:
    title: str
    toggles: tuple[Toggle, ...] = ()


WIFI_TOGGLE = Toggle("Wi-Fi", "global", "wifi_on", "1", on_summary="Connected to HomeNet")
AIRPLANE = Toggle("Airplane mode", "global", "airplane_mode_on", "0")
PAGES: dict[str, Page] = {
    NETWORK: Page("Network & internet", (WIFI_TOGGLE, Toggle("Mobile data", "global", "mobile_data", "1"),
                                         AIRPLANE)),
    WIFI: Page("Internet", (WIFI_TOGGLE, AIRPLANE)),
    BLUETOOTH: Page("Connected devices", (Toggle("Use Bluetooth", "global", "bluetooth_on", "1"),)),
    DISPLAY: Page("Display", (Toggle("Adaptive brightness", "system", "screen_brightness_mode", "0"),
                              Toggle("Dark theme", "secure", "ui_night_mode", "1", on="2", off="1"))),
    ZEN: Page("Do Not Disturb", (Toggle("Do Not Disturb", "global", "zen_mode", "0",
                                        on_summary="On / Until you turn off"),)),
    LOCATION: Page("Location", (Toggle("Use location", "secure", "location_mode", "3", on="3"),)),
    SECURITY: Page("Security & privacy", (Toggle("Screen lock", "secure", "lockscreen.disabled", "0", on="0",
                                                 off="1", on_summary="PIN", off_summary="None"),)),
}
HOME_ROWS: tuple[tuple[str, str, str | None], ...] = (
    ("Network & internet", "Wi-Fi, mobile, data usage, and hotspot", NETWORK),
    ("Connected devices", "Bluetooth, pairing", BLUETOOTH),
    ("Apps", "Assistant, recent apps, default apps", APPS),
    ("Notifications", "Notification history, conversations", None),
    ("Battery", "Battery saver, usage", None),
    ("Storage", "Used space, free up space", None),
    ("Sound & vibration", "Volume, haptics, Do Not Disturb", ZEN),
    ("Display", "Dark theme, font size, brightness", DISPLAY),
    ("Wallpaper & style", "Colors, themed icons, app grid", None),
    ("Accessibility", "Display, interaction, audio", None),
    ("Security & privacy", "App security, device lock, permissions", SECURITY),
    ("Location", "On - apps have access to location", LOCATION),
    ("Safety & emergency", "Emergency SOS, medical info, alerts", None),
    ("Passwords & accounts", "Saved passwords, autofill, synced accounts", None),
    ("Digital Wellbeing & parental controls", "Screen time, app timers", None),
    ("System", "Languages, gestures, time, backup", None),
    ("About phone", "Pixel 7", None),
)


class SettingsActivity(Activity):
    """Every Settings screen: a titled list of rows (links, switches, or a seek bar)."""

    def __init__(self, app: "Settings", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.settings = app
        self.first = 0
        self._list = Bounds(0, 0, 0, 0)
        self._rows = 0

    def value(self, toggle: Toggle) -> str:
        return self.system.settings[toggle.namespace].get(toggle.key, toggle.default)

    def flip(self, toggle: Toggle) -> None:
        on = self.value(toggle) == toggle.on
        self.system.settings[toggle.namespace][toggle.key] = toggle.off if on else toggle.on

    def title(self) -> str:
        if self.name == HOME:
            return "Settings"
        if self.name == APPS:
            return "All apps"
        if self.name == APP_INFO:
            return self.system.label_of(self.target_package())
        page = PAGES.get(self.name)
        return page.title if page else str(self.intent.extras.get("title", "Settings"))

    def target_package(self) -> str:
        return (self.intent.data or "").removeprefix("package:")

    def rows(self) -> list[Callable[[Bounds], ViewNode]]:
        if self.name == HOME:
            return [self._link(t, s, lambda a=act, t=t: self.settings.open(a, title=t)) for t, s, act in HOME_ROWS]
        if self.name == APPS:
            apps = sorted((a for a in self.system.apps.values() if a.LAUNCHER_ACTIVITY and a.package != PACKAGE),
                          key=lambda a: a.label.lower())
            return [self._link(a.label, a.VERSION_NAME, lambda p=a.package: self.settings.open(
                APP_INFO, data=f"package:{p}")) for a in apps]
        if self.name == APP_INFO:
            package = self.target_package()
            granted = self.system.granted.setdefault(package, set())
            return [self._switch_row(label, "Allowed" if perm in granted else "Not allowed", perm in granted,
                                     lambda perm=perm: (granted.discard if perm in granted else granted.add)(perm))
                    for label, perm in PERMISSION_GROUPS]
        page = PAGES.get(self.name, Page(""))
        rows = [self._switch_row(t.title, t.on_summary if self.value(t) == t.on else t.off_summary,
                                 self.value(t) == t.on, lambda t=t: self.flip(t)) for t in page.toggles]
        if self.name == DISPLAY:
            rows.insert(0, self._brightness_row)
        return rows

    def _link(self, title: str, summary: str, on_click: Callable[[], None]) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            return group(b, [text_view(Bounds(180, b.top + 40, b.right - 60, b.top + 110), title, "android:id/title"),
                             text_view(Bounds(180, b.top + 110, b.right - 60, b.top + 170), summary,
                                       "android:id/summary")],
                         cls="android.widget.LinearLayout", on_click=on_click)
        return make

    def _switch_row(self, title: str, summary: str, checked: bool,
                    on_click: Callable[[], None]) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            return group(b, [text_view(Bounds(60, b.top + 40, b.right - 260, b.top + 110), title, "android:id/title"),
                             text_view(Bounds(60, b.top + 110, b.right - 260, b.top + 170), summary,
                                       "android:id/summary"),
                             switch(Bounds(b.right - 220, b.top + 50, b.right - 60, b.top + 150), checked,
                                    "android:id/switch_widget", on_click)],
                         cls="android.widget.LinearLayout", on_click=on_click)
        return make

    def _brightness_row(self, b: Bounds) -> ViewNode:
        level = int(self.system.settings["system"].get("screen_brightness", "102") or 0)
        percent = round(level * 100 / 255)
        bar = ViewNode("android.widget.SeekBar", Bounds(60, b.top + 110, b.right - 60, b.top + 180),
                       text=f"{percent}%", resource_id=rid("seekbar"), content_desc="Brightness level",
                       focusable=True, scrollable=False)
        return group(b, [text_view(Bounds(60, b.top + 30, b.right - 60, b.top + 100), "Brightness level",
                                   "android:id/title"), bar], cls="android.widget.LinearLayout")

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views: list[ViewNode] = [text_view(Bounds(60, screen.top + 60, w - 60, screen.top + 260), self.title(),
                                           rid("collapsing_toolbar" if self.name != HOME else "homepage_title"))]
        top = screen.top + 300
        if self.name == HOME:
            views.append(text_view(Bounds(60, top, w - 60, top + 140), "Search settings", rid("search_action_bar_title"),
                                   on_click=lambda: None))
            top += 180
        rows = self.rows()
        self._list, self._rows = Bounds(0, top, w, screen.bottom), len(rows)
        self.first = min(self.first, max(0, len(rows) - 1))
        views.append(row_list(self._list, rows, ROW_HEIGHT, self.first, rid("recycler_view")))
        return views

    def on_scroll(self, dy: int) -> bool:
        if not self._rows:
            self.system.window()  # lay the list out first, as a real view is before it gets input
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self._rows, self._list)
        return self.first != before


class Settings(App):
    PACKAGE = PACKAGE
    LABEL = "Settings"
    LAUNCHER_ACTIVITY = HOME
    ACTIVITIES = (HOME, NETWORK, WIFI, BLUETOOTH, DISPLAY, ZEN, LOCATION, SECURITY, APPS, APP_INFO, SUB_SETTINGS)
    VERSION_NAME = "14"
    VERSION_CODE = 34

    def open(self, activity: str | None, data: str | None = None, title: str = "") -> None:
        self.system.start_activity(Intent(None, data=data, component=ComponentName(PACKAGE, activity or SUB_SETTINGS),
                                          extras={"title": title} if title else {}))

    def resolve(self, intent: Intent) -> str | None:
        activity = ACTIONS.get(intent.action or "")
        if activity == APP_INFO and not (intent.data or "").startswith("package:"):
            return None
        return activity

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        return SettingsActivity(self, activity, intent)
