"""The screen side of the virtual phone's system: the window tree as the display lays it out,
what is drawn over the app, screenshots, and touch and key input dispatch.

`AndroidSystem` inherits it; it reads the system's stack, dialogs, shade and settings, and
sizes everything from the current display metrics, so `wm size` changes the hierarchy bounds,
the screenshots and where gestures land.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from device_farm.virtual.os.dialogs import window_title
from device_farm.virtual.os.display import DisplayMetrics, display_metrics
from device_farm.virtual.ui.render import ScreenRenderer, StatusBar
from device_farm.virtual.ui.views import Bounds, ViewNode, hit_test, walk
from device_farm.virtual.ui.windows import SYSTEMUI, dialog_window, shade_window

if TYPE_CHECKING:
    from device_farm.virtual.os.app import Activity
    from device_farm.virtual.os.dialogs import Dialog
    from device_farm.virtual.os.intents import ComponentName
    from device_farm.virtual.os.notifications import Notification, NotificationList

STATUS_BAR_HEIGHT = 132
NAV_BAR_HEIGHT = 63
TOUCH_SLOP, LONG_PRESS_MS = 21, 500
KEYCODES: dict[str, int] = {
    "HOME": 3, "BACK": 4, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21, "DPAD_RIGHT": 22,
    "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27,
    "TAB": 61, "SPACE": 62, "ENTER": 66, "DEL": 67, "MENU": 82, "SEARCH": 84,
    "VOLUME_MUTE": 164, "APP_SWITCH": 187, "WAKEUP": 224, "SLEEP": 223,
}


class ScreenInput:
    """Window building, rendering and input for the system that mixes it in."""

    settings: dict[str, dict[str, str]]
    dialogs: list["Dialog"]
    notifications: "NotificationList"
    shade_open: bool
    screen_on: bool
    battery_level: int
    slow_screen: tuple[float, float]
    _renderer: ScreenRenderer | None = None

    # provided by AndroidSystem
    @property
    def foreground(self) -> "Activity":
        raise NotImplementedError

    def current_component(self) -> "ComponentName":
        raise NotImplementedError

    def now(self) -> float:
        raise NotImplementedError

    def home(self) -> None:
        raise NotImplementedError

    def back(self) -> None:
        raise NotImplementedError

    def answer_dialog(self, dialog: "Dialog", choice: str) -> None:
        raise NotImplementedError

    def label_of(self, package: str) -> str:
        raise NotImplementedError

    def open_notification(self, note: "Notification") -> None:
        raise NotImplementedError

    def notifications_cleared(self) -> None:
        raise NotImplementedError

    # --- display ---------------------------------------------------------------------
    @property
    def display(self) -> DisplayMetrics:
        """The display as `wm size` / `wm density` leave it."""
        return display_metrics(self.settings)

    @property
    def renderer(self) -> ScreenRenderer:
        """The renderer for the current display size (a new one after `wm size`)."""
        d = self.display
        if self._renderer is None or (self._renderer.width, self._renderer.height) != (d.width, d.height):
            self._renderer = ScreenRenderer(d.width, d.height, STATUS_BAR_HEIGHT, NAV_BAR_HEIGHT)
        return self._renderer

    # --- windows -------------------------------------------------------------------
    def window(self) -> ViewNode:
        """The focused window's view tree, freshly built."""
        activity = self.foreground
        d = self.display
        content = Bounds(0, STATUS_BAR_HEIGHT, d.width, d.height - NAV_BAR_HEIGHT)
        root = ViewNode("android.widget.FrameLayout", Bounds(0, 0, d.width, d.height), children=[
            ViewNode("android.widget.FrameLayout", content, resource_id="android:id/content",
                     children=activity.build(content)),
        ])
        root.set_package(activity.package)
        overlay = self.overlay(content)
        if overlay is not None:
            root.children.append(overlay)
        return root

    def overlay(self, content: Bounds | None = None) -> ViewNode | None:
        """The window over the app that takes all input (top dialog, else the shade)."""
        d = self.display
        screen = Bounds(0, 0, d.width, d.height - NAV_BAR_HEIGHT)
        if self.dialogs:
            dialog = self.dialogs[-1]
            return dialog_window(dialog, screen, lambda choice: self.answer_dialog(dialog, choice))
        if self.shade_open:
            return shade_window(self.notifications.items, screen, self.label_of,
                                self.open_notification, self.notifications_cleared)
        return None

    def focus(self) -> tuple[str, str]:
        """(package, window name) of the focused window, as `dumpsys window` names it."""
        if self.dialogs:
            return self.dialogs[-1].window_package, window_title(self.dialogs[-1])
        if self.shade_open:
            return SYSTEMUI, "NotificationShade"
        comp = self.current_component()
        return comp.package, f"{comp.package}/{comp.cls}"

    def screen_delay(self) -> float:
        """Seconds a hierarchy dump or screenshot takes now (a slow-screen fault)."""
        delay, until = self.slow_screen
        return delay if time.monotonic() < until else 0.0

    def status_bar(self) -> StatusBar:
        tz_utc = time.gmtime(self.now())
        glob = self.settings["global"]
        return StatusBar(clock=f"{tz_utc.tm_hour:02d}:{tz_utc.tm_min:02d}", battery=self.battery_level,
                         wifi=glob.get("wifi_on") == "1", mobile_data=glob.get("mobile_data", "1") == "1",
                         airplane=glob.get("airplane_mode_on") == "1")

    def screenshot(self, fmt: str = "png", scale: float = 1.0, quality: int = 80) -> bytes:
        """The screen as PNG (what `screencap -p` writes) or JPEG bytes."""
        return self.renderer.encoded(self.window(), self.status_bar(), self.screen_on, fmt, scale, quality)

    # --- input ---------------------------------------------------------------------
    def tap(self, x: float, y: float) -> bool:
        """Dispatch a tap; True if some view took it. A window over the app takes them all."""
        node = hit_test(self.overlay() or self.window(), x, y)
        if node is None:
            return False
        activity = self.foreground
        if node.editable and node.focusable:
            activity.focused = node.resource_id
        if node.on_click is not None:
            node.on_click()
        return True

    def focused_field(self) -> ViewNode | None:
        for node, _, _ in walk(self.window()):
            if node.focused and node.editable:
                return node
        return None

    def set_text(self, node: ViewNode, text: str) -> None:
        if node.on_set_text is not None:
            node.on_set_text(text)

    def input_text(self, text: str) -> bool:
        field = self.focused_field()
        if field is None:
            return False
        self.set_text(field, field.value + text)
        return True

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        """A drag gesture. Within touch slop and short it is a tap; a long one is a long
        press (no click); up from the navigation handle goes home (gesture navigation)."""
        if abs(x2 - x1) <= TOUCH_SLOP and abs(y2 - y1) <= TOUCH_SLOP:
            if duration_ms < LONG_PRESS_MS:
                self.tap(x1, y1)
            return
        if y1 >= self.display.height - NAV_BAR_HEIGHT and y1 - y2 > 200:
            self.home()
        elif y1 <= STATUS_BAR_HEIGHT and y2 - y1 > 200 and not self.dialogs:
            self.shade_open = True
        elif not self.dialogs and not self.shade_open and abs(y2 - y1) > abs(x2 - x1):
            self.foreground.on_scroll(int(y1 - y2))

    def key(self, code: int) -> None:
        if code == KEYCODES["BACK"]:
            self.back()
        elif code == KEYCODES["HOME"]:
            self.home()
        elif code == KEYCODES["DEL"]:
            field = self.focused_field()
            if field is not None and field.value:
                self.set_text(field, field.value[:-1])
        elif code in (KEYCODES["POWER"], KEYCODES["SLEEP"]):
            self.screen_on = code == KEYCODES["POWER"] and not self.screen_on
        elif code == KEYCODES["WAKEUP"]:
            self.screen_on = True
