"""The Android "system" of the virtual phone: packages, the activity stack, intent
resolution, content resolver, dialogs, notifications, processes, properties and settings
(the window tree, screenshots and input dispatch are in `screen`).

All state lives here and is touched only from the phone's event loop, so no locking is
needed. Everything a client can observe is reached through adb (shell commands, sync,
the uiautomator2 server); nothing outside the phone reads this object directly.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from device_farm.virtual.os.app import Activity, App, StartResult
from device_farm.virtual.os.content import SqliteProvider
from device_farm.virtual.os.dialogs import Dialog
from device_farm.virtual.os.display import PHYSICAL_DENSITY
from device_farm.virtual.os.fs import FileSystem
from device_farm.virtual.os.intents import (
    ACTION_MAIN, CATEGORY_HOME, CATEGORY_LAUNCHER, ComponentName, Intent,
)
from device_farm.virtual.os.notifications import Notification, NotificationList
from device_farm.virtual.os.screen import ScreenInput
from device_farm.virtual.os.settings_provider import SettingsProvider

if TYPE_CHECKING:
    from device_farm.virtual.adbd.stream import StreamHandler

@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    user: str
    name: str


class AndroidSystem(ScreenInput):
    """One phone's system state (its screen and input half is in `screen`)."""

    def __init__(self, serial: str, app_factories: list[Callable[["AndroidSystem"], App]],
                 model: str = "Pixel 7", product: str = "panther") -> None:
        self.serial = serial
        self.props: dict[str, str] = {
            "ro.serialno": serial, "ro.product.model": model, "ro.product.name": product,
            "ro.product.device": product, "ro.product.brand": "google",
            "ro.product.manufacturer": "Google", "ro.product.cpu.abi": "arm64-v8a",
            "ro.build.version.sdk": "34", "ro.build.version.release": "14",
            "ro.build.type": "user", "ro.build.id": "UQ1A.240205.004",
            "ro.build.fingerprint": f"google/{product}/{product}:14/UQ1A.240205.004/11269751:user/release-keys",
            "ro.debuggable": "0", "ro.secure": "1", "sys.boot_completed": "1",
            "init.svc.bootanim": "stopped", "persist.sys.timezone": "UTC",
            "ro.sf.lcd_density": str(PHYSICAL_DENSITY), "service.adb.tcp.port": "-1",
        }
        self.settings: dict[str, dict[str, str]] = {
            "system": {"screen_brightness": "102", "screen_off_timeout": "60000",
                       "pointer_location": "0", "show_touches": "0"},
            "secure": {"default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
                       "android_id": hashlib.sha256(serial.encode()).hexdigest()[:16]},
            "global": {"airplane_mode_on": "0", "adb_enabled": "1", "wifi_on": "1", "mobile_data": "1",
                       "development_settings_enabled": "1"},
        }
        self.settings_provider = SettingsProvider(lambda: self.settings)
        """`content://settings/...`, over `settings` (which a snapshot restore replaces)."""
        self.fs = FileSystem()
        self.listeners: dict[int, "StreamHandler"] = {}
        """In-phone TCP listeners reachable through the `tcp:<port>` service."""
        self.abstract_sockets: dict[str, "StreamHandler"] = {}
        """Services listening on abstract unix sockets (`localabstract:<name>`)."""
        self.uiautomator_handler: "StreamHandler | None" = None
        """What `app_process ... com.wetest.uia2.Main` serves (set by the phone)."""
        self.screen_on = True
        self.clipboard: str | None = None
        self.time_offset = 0.0
        """Seconds the phone's wall clock runs ahead of the host's (snapshots move it)."""
        self.battery_level = 100
        self.notifications = NotificationList()
        self.shade_open = False
        self.dialogs: list[Dialog] = []
        """Windows over the app (ANR, crash, permission prompt, pop-up), newest last."""
        self.granted: dict[str, set[str]] = {}
        """Runtime permissions granted, by package."""
        self.ui_automation_connected = True
        """False once the uiautomator2 server has lost UiAutomation (a fault); a fresh
        `app_process` launch of the server connects it again."""
        self.uiautomator_process: "asyncio.Event | None" = None
        """Set to end the running `app_process` uiautomator2 server (it died)."""
        self.slow_screen: tuple[float, float] = (0.0, 0.0)
        """(extra seconds per hierarchy dump or screenshot, until this monotonic time)."""
        self.apps: dict[str, App] = {}
        for factory in app_factories:
            app = factory(self)
            self.apps[app.package] = app
            self.fs.mkdir(f"/data/data/{app.package}", parents=True)
        self._next_pid = 10000
        self._procs: dict[str, Process] = {}
        self.stack: list[Activity] = []
        self.home()

    def shutdown(self) -> None:
        """Release the providers' databases."""
        for app in self.apps.values():
            for provider in app.providers():
                provider.close()

    def now(self) -> float:
        """The phone's wall clock (seconds since the epoch)."""
        return time.time() + self.time_offset

    def set_time(self, when: float) -> None:
        self.time_offset = when - time.time()

    # --- packages and processes -------------------------------------------------------
    def processes(self) -> list[Process]:
        return list(self._procs.values())

    def set_processes(self, processes: list[Process], next_pid: int) -> None:
        """Replace the process table (snapshot restore)."""
        self._procs = {p.name: p for p in processes}
        self._next_pid = next_pid

    @property
    def next_pid(self) -> int:
        return self._next_pid

    def _ensure_process(self, app: App) -> None:
        if app.package not in self._procs:
            uid = 10000 + list(self.apps).index(app.package) + 100
            self._procs[app.package] = Process(self._next_pid, 1, f"u0_a{uid - 10000}", app.package)
            self._next_pid += 1

    def content_provider(self, authority: str) -> SqliteProvider | SettingsProvider | None:
        """What a content URI with this authority reaches: an app's provider or the system's settings."""
        if authority == self.settings_provider.AUTHORITY:
            return self.settings_provider
        return self.provider(authority)

    def provider(self, authority: str) -> SqliteProvider | None:
        """An installed app's provider."""
        for app in self.apps.values():
            for provider in app.providers():
                if provider.AUTHORITY == authority:
                    return provider
        return None

    # --- activities ----------------------------------------------------------------
    @property
    def foreground(self) -> Activity:
        return self.stack[-1]

    def home_app(self) -> App:
        for app in self.apps.values():
            if app.resolve(Intent(ACTION_MAIN, categories=[CATEGORY_HOME])):
                return app
        raise LookupError("no home app installed")

    def resolve(self, intent: Intent) -> tuple[App, str] | str:
        """(app, activity class) for an intent, or the error `am` prints."""
        if intent.component is not None:
            app = self.apps.get(intent.component.package)
            if app is None or intent.component.cls not in app.ACTIVITIES:
                return (f"Error type 3\nError: Activity class {{{intent.component.short()}}} "
                        "does not exist.")
            return app, intent.component.cls
        candidates = [self.apps[intent.package]] if intent.package in self.apps else (
            [] if intent.package else list(self.apps.values()))
        for app in candidates:
            if CATEGORY_LAUNCHER in intent.categories and intent.action in (None, ACTION_MAIN):
                if app.LAUNCHER_ACTIVITY:
                    return app, app.LAUNCHER_ACTIVITY
                continue
            activity = app.resolve(intent)
            if activity is not None:
                return app, activity
        return f"Error: Activity not started, unable to resolve {intent.to_short_string()}"

    def start_activity(self, intent: Intent) -> StartResult:
        target = self.resolve(intent)
        if isinstance(target, str):
            return StartResult(error=target)
        app, cls = target
        self._ensure_process(app)
        top = self.foreground if self.stack else None
        if top is not None and top.package == app.package and top.name == cls and (
                CATEGORY_LAUNCHER in intent.categories):
            return StartResult(delivered_to_top=True)
        activity = app.launch(cls, intent)
        if activity is not None:
            self.stack.append(activity)
        return StartResult()

    def finish_activity(self, activity: Activity) -> None:
        if activity in self.stack:
            self.stack.remove(activity)
        if not self.stack:
            self.home()

    def home(self) -> None:
        """Show the home screen; other tasks go to the background (their activities end)."""
        self.shade_open = False
        self.dialogs = [d for d in self.dialogs if d.modal_over_home]
        app = self.home_app()
        self._ensure_process(app)
        launcher = next((a for a in self.stack if a.app is app), None)
        if launcher is None:
            intent = Intent(ACTION_MAIN, categories=[CATEGORY_HOME])
            launcher = app.launch(str(app.resolve(intent)), intent)
            assert launcher is not None
        self.stack = [launcher]

    def back(self) -> None:
        if self.dialogs:
            self.answer_dialog(self.dialogs[-1], "")
            return
        if self.shade_open:
            self.shade_open = False
            return
        top = self.foreground
        if top.on_back():
            return
        if len(self.stack) > 1:
            self.stack.pop()

    def force_stop(self, package: str) -> None:
        if package == self.home_app().package:
            return
        self.stack = [a for a in self.stack if a.package != package]
        self._procs.pop(package, None)
        if not self.stack:
            self.home()

    def current_component(self) -> ComponentName:
        return ComponentName(self.foreground.package, self.foreground.name)

    # --- dialogs and notifications -------------------------------------------------
    def label_of(self, package: str) -> str:
        app = self.apps.get(package)
        return app.label if app is not None else package.rsplit(".", 1)[-1].capitalize()

    def show_dialog(self, dialog: Dialog) -> None:
        self.shade_open = False
        self.dialogs.append(dialog)

    def answer_dialog(self, dialog: Dialog, choice: str) -> None:
        """A dialog's button (or BACK, `choice=""`) was pressed."""
        if dialog in self.dialogs:
            self.dialogs.remove(dialog)
        if dialog.kind == "anr" and choice == "Close app":
            self.force_stop(dialog.package)
        elif dialog.kind == "permission" and choice == "Allow":
            self.granted.setdefault(dialog.package, set()).add(dialog.permission)

    def crash_app(self, package: str) -> None:
        """The app's process dies: its activities go, and its crash dialog shows."""
        from device_farm.virtual.os.dialogs import crash

        self.force_stop(package)
        self.show_dialog(crash(package, self.label_of(package)))

    def post_notification(self, package: str, title: str, text: str, channel: str = "default") -> Notification:
        return self.notifications.post(package, title, text, self.now(), channel)

    def open_notification(self, note: Notification) -> None:
        """Tapping a notification: the shade closes, the app opens, the notification goes."""
        self.notifications.cancel(note.id)
        self.shade_open = False
        if note.package in self.apps:
            self.start_activity(Intent(ACTION_MAIN, package=note.package, categories=[CATEGORY_LAUNCHER]))

    def notifications_cleared(self) -> None:
        self.notifications.clear()
        self.shade_open = False
