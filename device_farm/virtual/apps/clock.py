"""Clock (com.google.android.deskclock): the alarm list, a time-picker dialog behind the
"Add alarm" button, the AlarmClock intents (SET_ALARM, SHOW_ALARMS) and the alarms
provider `content://com.android.deskclock/alarms`
(columns `_id, hour, minutes, enabled, vibrate, label, daysofweek`)."""

from __future__ import annotations

from typing import Any

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, switch, text_view

PACKAGE = "com.google.android.deskclock"
DESK_CLOCK = "com.android.deskclock.DeskClock"
HANDLE_API_CALLS = "com.android.deskclock.HandleApiCalls"
ACTION_SET_ALARM = "android.intent.action.SET_ALARM"
ACTION_SHOW_ALARMS = "android.intent.action.SHOW_ALARMS"
EXTRA_HOUR = "android.intent.extra.alarm.HOUR"
EXTRA_MINUTES = "android.intent.extra.alarm.MINUTES"
EXTRA_MESSAGE = "android.intent.extra.alarm.MESSAGE"
EXTRA_SKIP_UI = "android.intent.extra.alarm.SKIP_UI"
EXTRA_VIBRATE = "android.intent.extra.alarm.VIBRATE"
EXTRA_DAYS = "android.intent.extra.alarm.DAYS"
ALARMS_URI = ContentUri("com.android.deskclock", ("alarms",))
ROW_HEIGHT = 280


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


def format_time(hour: int, minutes: int) -> str:
    """`7:30 AM`, as the alarm list shows it in a 12-hour locale."""
    return f"{(hour % 12) or 12}:{minutes:02d} {'AM' if hour < 12 else 'PM'}"


class AlarmProvider(SqliteProvider):
    AUTHORITY = "com.android.deskclock"
    SCHEMA = """
        CREATE TABLE alarms (
            _id INTEGER PRIMARY KEY AUTOINCREMENT,
            hour INTEGER NOT NULL CHECK (hour BETWEEN 0 AND 23),
            minutes INTEGER NOT NULL CHECK (minutes BETWEEN 0 AND 59),
            enabled INTEGER NOT NULL DEFAULT 0,
            vibrate INTEGER NOT NULL DEFAULT 1,
            label TEXT NOT NULL DEFAULT '',
            daysofweek INTEGER NOT NULL DEFAULT 0
        );
    """
    PATHS = {("alarms",): Table("alarms")}


class AlarmListActivity(Activity):
    """DeskClock's alarm tab, with an optional time-picker dialog on top."""

    def __init__(self, app: "Clock", name: str, intent: Intent, picker: bool = False) -> None:
        super().__init__(app, name, intent)
        self.clock = app
        self.picker: dict[str, str] | None = {"hour": "", "minute": ""} if picker else None

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views: list[ViewNode] = [text_view(Bounds(0, screen.top, w, screen.top + 168), "Alarm",
                                           rid("action_bar_title"))]
        rows: list[ViewNode] = []
        top = screen.top + 200
        for alarm_id, hour, minutes, enabled, label in self.clock.alarms():
            row_top = top + len(rows) * ROW_HEIGHT
            children = [text_view(Bounds(60, row_top + 40, w - 380, row_top + 180),
                                  format_time(hour, minutes), rid("digital_clock"))]
            if label:
                children.append(text_view(Bounds(60, row_top + 180, w - 380, row_top + 250), label,
                                          rid("edit_label")))
            children.append(switch(Bounds(w - 220, row_top + 70, w - 60, row_top + 170), bool(enabled),
                                   rid("onoff"), lambda a=alarm_id: self.clock.toggle(a)))
            rows.append(group(Bounds(0, row_top, w, row_top + ROW_HEIGHT), children,
                              rid("alarm_item"), cls="android.widget.FrameLayout"))
        list_bounds = Bounds(0, top, w, screen.bottom - 200)
        if rows:
            views.append(group(list_bounds, rows, rid("alarm_recycler_view"),
                               cls="androidx.recyclerview.widget.RecyclerView", scrollable=len(rows) > 6))
        else:
            views.append(text_view(list_bounds, "No alarms", rid("alarms_empty_view")))
        views.append(button(Bounds(w // 2 - 110, screen.bottom - 420, w // 2 + 110, screen.bottom - 220),
                            "", rid("fab"), desc="Add alarm", on_click=self._open_picker, image=True))
        tabs = [text_view(Bounds(i * w // 4, screen.bottom - 200, (i + 1) * w // 4, screen.bottom), name,
                          desc=name) for i, name in enumerate(("Alarm", "Clock", "Timer", "Stopwatch"))]
        tabs[0].selected = True
        views.append(group(Bounds(0, screen.bottom - 200, w, screen.bottom), tabs, rid("tabs")))
        if self.picker is not None:
            views.extend(self._picker_views(screen))
        return views

    def _picker_views(self, screen: Bounds) -> list[ViewNode]:
        assert self.picker is not None
        picker = self.picker

        def setter(key: str) -> Any:
            return lambda text: picker.__setitem__(key, text)

        def x(at: int) -> int:  # laid out for 1080 px, scaled to the width in use (`wm size`)
            return at * screen.right // 1080

        d = Bounds(x(90), 800, x(990), 1500)
        dialog = group(d, [
            text_view(Bounds(x(150), 840, x(930), 940), "Set alarm time", "android:id/alertTitle"),
            edit_text(self, Bounds(x(150), 980, x(520), 1160), "android:id/input_hour", "Hour",
                      picker["hour"], setter("hour")),
            edit_text(self, Bounds(x(560), 980, x(930), 1160), "android:id/input_minute", "Minute",
                      picker["minute"], setter("minute")),
            button(Bounds(x(470), 1340, x(700), 1460), "Cancel", "android:id/button2", on_click=self._close_picker),
            button(Bounds(x(720), 1340, x(950), 1460), "OK", "android:id/button1", on_click=self._confirm_picker),
        ], "android:id/parentPanel", cls="android.widget.FrameLayout")
        scrim = group(Bounds(0, 0, screen.right, screen.bottom + 100), [], on_click=self._close_picker)
        return [scrim, dialog]

    def _open_picker(self) -> None:
        self.picker = {"hour": "", "minute": ""}
        self.focused = "android:id/input_hour"

    def _close_picker(self) -> None:
        self.picker = None
        self.focused = None

    def _confirm_picker(self) -> None:
        assert self.picker is not None
        try:
            hour, minute = int(self.picker["hour"]), int(self.picker["minute"] or 0)
        except ValueError:
            return
        if 0 <= hour <= 23 and 0 <= minute <= 59:
            self.clock.set_alarm(hour, minute, "", vibrate=True, days=0)
            self._close_picker()

    def on_back(self) -> bool:
        if self.picker is not None:
            self._close_picker()
            return True
        return False


class Clock(App):
    PACKAGE = PACKAGE
    LABEL = "Clock"
    LAUNCHER_ACTIVITY = DESK_CLOCK
    ACTIVITIES = (DESK_CLOCK, HANDLE_API_CALLS)
    VERSION_NAME = "7.8 (6210556)"
    VERSION_CODE = 708006210

    def create_providers(self) -> list[SqliteProvider]:
        return [AlarmProvider()]

    @property
    def db(self) -> AlarmProvider:
        provider = self.providers()[0]
        assert isinstance(provider, AlarmProvider)
        return provider

    def alarms(self) -> list[tuple[int, int, int, int, str]]:
        _, rows = self.db.query(ALARMS_URI, ["_id", "hour", "minutes", "enabled", "label"],
                                sort="hour, minutes, _id")
        return [tuple(r) for r in rows]  # type: ignore[misc]

    def toggle(self, alarm_id: int) -> None:
        self.db.db.execute("UPDATE alarms SET enabled = 1 - enabled WHERE _id = ?", (alarm_id,))

    def set_alarm(self, hour: int, minutes: int, label: str, vibrate: bool, days: int) -> None:
        """Enable a matching alarm, or create one (DeskClock reuses an identical alarm)."""
        row = self.db.db.execute(
            "SELECT _id FROM alarms WHERE hour = ? AND minutes = ? AND label = ? AND daysofweek = ?",
            (hour, minutes, label, days)).fetchone()
        if row is not None:
            self.db.db.execute("UPDATE alarms SET enabled = 1 WHERE _id = ?", (row[0],))
        else:
            self.db.insert(ALARMS_URI, {"hour": hour, "minutes": minutes, "enabled": 1,
                                        "vibrate": int(vibrate), "label": label, "daysofweek": days})

    def resolve(self, intent: Intent) -> str | None:
        if intent.action in (ACTION_SET_ALARM, ACTION_SHOW_ALARMS):
            return HANDLE_API_CALLS
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == HANDLE_API_CALLS and intent.action == ACTION_SET_ALARM:
            hour = intent.extra_int(EXTRA_HOUR)
            if hour is not None and 0 <= hour <= 23:
                minutes = intent.extra_int(EXTRA_MINUTES, 0) or 0
                days = 0
                for day in intent.extras.get(EXTRA_DAYS) or []:
                    days |= 1 << ((int(day) + 5) % 7)  # Calendar.SUNDAY=1 -> bit 6, MONDAY=2 -> bit 0
                self.set_alarm(hour, minutes % 60, intent.extra_str(EXTRA_MESSAGE) or "",
                               intent.extra_bool(EXTRA_VIBRATE, True), days)
                if intent.extra_bool(EXTRA_SKIP_UI):
                    return None
                return AlarmListActivity(self, DESK_CLOCK, intent)
            return AlarmListActivity(self, DESK_CLOCK, intent, picker=True)
        return AlarmListActivity(self, DESK_CLOCK, intent)
