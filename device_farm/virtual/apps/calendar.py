"""Calendar (com.google.android.calendar): the schedule (upcoming events by start time), an
event's details, the event editor (from the "Create new event" button or an INSERT intent on
`vnd.android.cursor.dir/event` with `title`, `beginTime`, `endTime` (ms), `eventLocation`,
`description`, `allDay` extras, saved on "Save") and CalendarContract's provider
`content://com.android.calendar/events` (`_id, calendar_id, title, description,
eventLocation, dtstart, dtend` (ms), `allDay, eventTimezone, deleted`).

Times show in the phone's zone (`persist.sys.timezone`); the editor's start and end fields
take `YYYY-MM-DD HH:MM` (the real app uses date and time pickers).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, scrolled, text_view

PACKAGE = "com.google.android.calendar"
ALL_IN_ONE = "com.android.calendar.AllInOneActivity"
EDIT = "com.android.calendar.event.EditEventActivity"
INFO = "com.android.calendar.EventInfoActivity"
ACTION_INSERT = "android.intent.action.INSERT"
ACTION_EDIT = "android.intent.action.EDIT"
EVENT_TYPES = ("vnd.android.cursor.dir/event", "vnd.android.cursor.item/event")
EVENTS_URI = ContentUri("com.android.calendar", ("events",))
FIELD_FORMAT = "%Y-%m-%d %H:%M"
ROW_HEIGHT = 220


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


class CalendarProvider(SqliteProvider):
    AUTHORITY = "com.android.calendar"
    SCHEMA = """
        CREATE TABLE calendars (_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, calendar_displayName TEXT,
            account_name TEXT, visible INTEGER NOT NULL DEFAULT 1);
        INSERT INTO calendars (name, calendar_displayName, account_name) VALUES ('me@gmail.com', 'me@gmail.com', 'me@gmail.com');
        CREATE TABLE events (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, calendar_id INTEGER NOT NULL DEFAULT 1,
            title TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
            eventLocation TEXT NOT NULL DEFAULT '', dtstart INTEGER NOT NULL, dtend INTEGER,
            allDay INTEGER NOT NULL DEFAULT 0, eventTimezone TEXT NOT NULL DEFAULT 'UTC',
            deleted INTEGER NOT NULL DEFAULT 0);
    """
    PATHS = {("events",): Table("events"), ("calendars",): Table("calendars")}


class ScheduleActivity(Activity):
    first, total, list_bounds = 0, 0, Bounds(0, 0, 1, 1)  # the scroll position and what it moves over

    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Calendar)
        w = screen.right
        views = [text_view(Bounds(180, screen.top + 20, w - 200, screen.top + 160),
                           app.when(self.system.now() * 1000, "%B"), rid("date_picker_text_view")),
                 button(Bounds(w - 180, screen.top + 20, w - 40, screen.top + 160), "", rid("action_today"),
                        desc="Jump to Today", image=True)]
        top, bottom = screen.top + 200, screen.bottom - 40
        events = app.events()
        self.total, self.list_bounds = len(events), Bounds(0, top, w, bottom)
        self.first = min(self.first, max(0, len(events) - (bottom - top) // ROW_HEIGHT))
        rows = []
        for i, (event_id, title, start, end, location) in enumerate(events[self.first:self.first + (bottom - top) // ROW_HEIGHT]):
            y = top + i * ROW_HEIGHT
            when = f"{app.when(start, '%a, %b %-d')} · {app.when(start, '%-I:%M %p')} – {app.when(end or start, '%-I:%M %p')}"
            children = [text_view(Bounds(200, y + 20, w - 60, y + 100), title or "(No title)", rid("title")),
                        text_view(Bounds(200, y + 105, w - 60, y + 160), when, rid("time"))]
            if location:
                children.append(text_view(Bounds(200, y + 160, w - 60, y + 210), location, rid("location")))
            rows.append(group(Bounds(0, y, w, y + ROW_HEIGHT), children, rid("chip"),
                              on_click=lambda e=event_id: app.open_event(e)))
        list_bounds = Bounds(0, top, w, bottom)
        if rows:
            views.append(group(list_bounds, rows, rid("timely_list"), cls="androidx.recyclerview.widget.RecyclerView",
                               scrollable=len(events) > (bottom - top) // ROW_HEIGHT))
        else:
            views.append(text_view(list_bounds, "Nothing planned. Tap to create.", rid("empty_view")))
        views.append(button(Bounds(w - 260, screen.bottom - 260, w - 60, screen.bottom - 60), "",
                            rid("floating_action_button"), desc="Create new event", image=True,
                            on_click=lambda: self.system.start_activity(
                                Intent(ACTION_INSERT, mime_type=EVENT_TYPES[0], package=PACKAGE))))
        return views


    def on_scroll(self, dy: int) -> bool:
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self.total, self.list_bounds)
        return before != self.first


class EventInfoActivity(Activity):
    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Calendar)
        event_id = int((self.intent.data or "0").rsplit("/", 1)[-1] or 0)
        row = app.db.db.execute("SELECT title, dtstart, dtend, eventLocation, description FROM events WHERE _id = ?",
                                (event_id,)).fetchone()
        title, start, end, location, description = row if row else ("", 0, 0, "", "")
        w = screen.right
        views = [button(Bounds(0, screen.top, 160, screen.top + 160), "", desc="Close", image=True, on_click=self.finish),
                 text_view(Bounds(60, screen.top + 200, w - 60, screen.top + 320), title, rid("title")),
                 text_view(Bounds(60, screen.top + 340, w - 60, screen.top + 420),
                           f"{app.when(start, '%A, %B %-d, %Y')} · {app.when(start, '%-I:%M %p')} – {app.when(end or start, '%-I:%M %p')}",
                           rid("time"))]
        for i, (text, name) in enumerate(((location, "location"), (description, "description"))):
            if text:
                views.append(text_view(Bounds(60, screen.top + 460 + i * 120, w - 60, screen.top + 560 + i * 120), text, rid(name)))
        return views


class EditEventActivity(Activity):
    FIELDS = (("title", "title", "Add title"), ("start", "start_date_time", "Start (YYYY-MM-DD HH:MM)"),
              ("end", "end_date_time", "End (YYYY-MM-DD HH:MM)"), ("location", "location", "Add location"),
              ("description", "description", "Add description"))

    def __init__(self, app: "Calendar", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.calendar = app
        hour = int(app.system.now() // 3600 + 1) * 3600 * 1000
        begin = intent.extra_int("beginTime") or hour
        end = intent.extra_int("endTime") or begin + 3600 * 1000
        self.values = {"title": intent.extra_str("title") or "", "start": app.when(begin, FIELD_FORMAT),
                       "end": app.when(end, FIELD_FORMAT), "location": intent.extra_str("eventLocation") or "",
                       "description": intent.extra_str("description") or ""}
        self.all_day = intent.extra_bool("allDay")
        self.error = ""
        self.focused = rid("title")

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [button(Bounds(0, screen.top, 160, screen.top + 160), "", rid("cancel"), desc="Close", image=True,
                        on_click=self.finish),
                 button(Bounds(w - 260, screen.top + 20, w - 40, screen.top + 140), "Save", rid("save"), on_click=self.save)]
        for i, (key, name, hint) in enumerate(self.FIELDS):
            top = screen.top + 200 + i * 190
            views.append(edit_text(self, Bounds(60, top, w - 60, top + 160), rid(name), hint, self.values[key],
                                   lambda text, key=key: self.values.__setitem__(key, text)))
        if self.error:
            views.append(text_view(Bounds(60, screen.top + 1200, w - 60, screen.top + 1300), self.error, rid("error")))
        return views

    def save(self) -> None:
        try:
            start, end = (self.calendar.parse(self.values[k]) for k in ("start", "end"))
        except ValueError:
            self.error = "Enter start and end as YYYY-MM-DD HH:MM"
            return
        if end < start:
            self.error = "The event can't end before it starts"
            return
        self.calendar.db.insert(EVENTS_URI, {
            "title": self.values["title"].strip(), "dtstart": start, "dtend": end, "allDay": int(self.all_day),
            "eventLocation": self.values["location"].strip(), "description": self.values["description"].strip(),
            "eventTimezone": self.calendar.zone.key})
        self.finish()


class Calendar(App):
    PACKAGE = PACKAGE
    LABEL = "Calendar"
    LAUNCHER_ACTIVITY = ALL_IN_ONE
    ACTIVITIES = (ALL_IN_ONE, EDIT, INFO)
    VERSION_NAME = "2024.38.0-677606371-release"
    VERSION_CODE = 2016902430

    def create_providers(self) -> list[SqliteProvider]:
        return [CalendarProvider()]

    @property
    def db(self) -> CalendarProvider:
        provider = self.providers()[0]
        assert isinstance(provider, CalendarProvider)
        return provider

    @property
    def zone(self) -> ZoneInfo:
        try:
            return ZoneInfo(self.system.props.get("persist.sys.timezone") or "UTC")
        except (ValueError, KeyError):
            return ZoneInfo("UTC")

    def when(self, millis: float, fmt: str) -> str:
        return datetime.fromtimestamp(millis / 1000, self.zone).strftime(fmt)

    def parse(self, text: str) -> int:
        return int(datetime.strptime(text.strip(), FIELD_FORMAT).replace(tzinfo=self.zone).timestamp() * 1000)

    def events(self) -> list[tuple[int, str, int, int | None, str]]:
        rows = self.db.db.execute("SELECT _id, title, dtstart, dtend, eventLocation FROM events WHERE deleted = 0 "
                                  "ORDER BY dtstart, _id").fetchall()
        return [(int(i), str(t), int(s), e, str(loc)) for i, t, s, e, loc in rows]

    def open_event(self, event_id: int) -> None:
        self.system.start_activity(Intent(ACTION_VIEW, data=f"{EVENTS_URI}/{event_id}", package=PACKAGE))

    def resolve(self, intent: Intent) -> str | None:
        data = intent.data or ""
        if intent.action in (ACTION_INSERT, ACTION_EDIT) and (intent.mime_type in EVENT_TYPES or data.startswith(str(EVENTS_URI))):
            return EDIT
        if intent.action == ACTION_VIEW and data.startswith(f"{EVENTS_URI}/"):
            return INFO
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == EDIT:
            return EditEventActivity(self, activity, intent)
        if activity == INFO:
            return EventInfoActivity(self, activity, intent)
        return ScheduleActivity(self, activity, intent)

