"""Phone (com.google.android.dialer): the Recents tab of the call log, the dialpad (from the
"key pad" button or a DIAL `tel:` intent, digits prefilled), the in-call screen (from the
dialpad's call button or a CALL `tel:` intent) and the call log provider
`content://call_log/calls` (`_id, number, name, date` (ms), `duration` (s), `type`: 1
incoming, 2 outgoing, 3 missed, `new`).

Virtual-phone simplification: Android's CALL goes through Telecom
(`com.android.server.telecom`); here the dialer takes it directly. A call is logged as
outgoing when it starts; "End call" writes its duration (the virtual clock's seconds).
"""

from __future__ import annotations

from urllib.parse import unquote

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, scrolled, text_view

PACKAGE = "com.google.android.dialer"
MAIN = "com.google.android.dialer.extensions.GoogleDialtactsActivity"
IN_CALL = "com.android.incallui.InCallActivity"
ACTION_DIAL = "android.intent.action.DIAL"
ACTION_CALL = "android.intent.action.CALL"
CALLS_URI = ContentUri("call_log", ("calls",))
KEYS = (("1", "one"), ("2", "two"), ("3", "three"), ("4", "four"), ("5", "five"), ("6", "six"),
        ("7", "seven"), ("8", "eight"), ("9", "nine"), ("*", "star"), ("0", "zero"), ("#", "pound"))
TYPE_LABELS = {1: "Incoming", 2: "Outgoing", 3: "Missed"}
ROW_HEIGHT = 200


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


def number_of(data: str | None) -> str:
    text = data or ""
    return unquote(text[4:] if text.startswith("tel:") else text).strip()


class CallLogProvider(SqliteProvider):
    AUTHORITY = "call_log"
    SCHEMA = """
        CREATE TABLE calls (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, number TEXT, name TEXT,
            date INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER) * 1000),
            duration INTEGER NOT NULL DEFAULT 0, type INTEGER NOT NULL DEFAULT 2,
            new INTEGER NOT NULL DEFAULT 1);
    """
    PATHS = {("calls",): Table("calls")}


class DialtactsActivity(Activity):
    """Recents (the call log, newest first) with the dialpad as an overlay when open."""

    first, total, list_bounds = 0, 0, Bounds(0, 0, 1, 1)  # the scroll position and what it moves over

    def __init__(self, app: "Dialer", name: str, intent: Intent, dialpad: bool = False) -> None:
        super().__init__(app, name, intent)
        self.dialer = app
        self.digits: str | None = number_of(intent.data) if dialpad else None
        if dialpad:
            self.focused = rid("digits")

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [text_view(Bounds(40, screen.top + 20, w - 40, screen.top + 160), "Search contacts & places",
                           rid("open_search_bar_text_view"))]
        top, bottom = screen.top + 200, screen.bottom - 200
        calls = self.dialer.calls()
        self.total, self.list_bounds = len(calls), Bounds(0, top, w, bottom)
        self.first = min(self.first, max(0, len(calls) - (bottom - top) // ROW_HEIGHT))
        rows = []
        for i, (number, name, kind) in enumerate(calls[self.first:self.first + (bottom - top) // ROW_HEIGHT]):
            y = top + i * ROW_HEIGHT
            rows.append(group(Bounds(0, y, w, y + ROW_HEIGHT), [
                text_view(Bounds(200, y + 30, w - 240, y + 110), self.dialer.label_for(number, name), rid("primary_text")),
                text_view(Bounds(200, y + 120, w - 240, y + 180), f"{TYPE_LABELS.get(kind, 'Call')} · {number}",
                          rid("secondary_text")),
                button(Bounds(w - 200, y + 40, w - 60, y + 160), "", rid("call_button"), desc=f"Call {number}",
                       image=True, on_click=lambda n=number: self.dialer.place_call(n)),
            ], rid("call_log_entry"), cls="android.widget.LinearLayout"))
        list_bounds = Bounds(0, top, w, bottom)
        if rows:
            views.append(group(list_bounds, rows, rid("new_call_log_recycler_view"),
                               cls="androidx.recyclerview.widget.RecyclerView", scrollable=len(calls) > (bottom - top) // ROW_HEIGHT))
        else:
            views.append(text_view(list_bounds, "No recent calls", rid("empty_list_view_message")))
        tabs = [text_view(Bounds(i * w // 4, bottom, (i + 1) * w // 4, screen.bottom), label, desc=label)
                for i, label in enumerate(("Favorites", "Recents", "Contacts", "Voicemail"))]
        tabs[1].selected = True
        views.append(group(Bounds(0, bottom, w, screen.bottom), tabs, rid("bottom_nav_bar")))
        views.append(button(Bounds(w - 260, bottom - 240, w - 60, bottom - 40), "", rid("dialpad_fab"),
                            desc="key pad", image=True, on_click=self.open_dialpad))
        if self.digits is not None:
            views.append(self._dialpad(screen))
        return views

    def _dialpad(self, screen: Bounds) -> ViewNode:
        w, top = screen.right, screen.top + 500
        children = [edit_text(self, Bounds(60, top, w - 200, top + 160), rid("digits"), "", self.digits or "",
                              lambda t: setattr(self, "digits", t)),
                    button(Bounds(w - 180, top + 20, w - 40, top + 140), "", rid("deleteButton"), desc="backspace",
                           image=True, on_click=lambda: setattr(self, "digits", (self.digits or "")[:-1]))]
        for i, (key, name) in enumerate(KEYS):
            r, c = divmod(i, 3)
            x, y = 90 + c * 300, top + 200 + r * 220
            children.append(button(Bounds(x, y, x + 240, y + 200), key, rid(name), desc=key,
                                   on_click=lambda k=key: setattr(self, "digits", (self.digits or "") + k)))
        y = top + 200 + 4 * 220
        children.append(button(Bounds(w // 2 - 110, y, w // 2 + 110, y + 200), "", rid("dialpad_voice_call_button"),
                               desc="dial", image=True, on_click=self.dial))
        return group(Bounds(0, top, w, screen.bottom), children, rid("dialpad_view"), cls="android.widget.LinearLayout")

    def on_scroll(self, dy: int) -> bool:
        if self.digits is not None:
            return False
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self.total, self.list_bounds)
        return before != self.first

    def open_dialpad(self) -> None:
        self.digits, self.focused = "", rid("digits")

    def dial(self) -> None:
        if self.digits:
            number, self.digits, self.focused = self.digits, None, None
            self.dialer.place_call(number)

    def on_back(self) -> bool:
        if self.digits is not None:
            self.digits, self.focused = None, None
            return True
        return False


class InCallActivity(Activity):
    def __init__(self, app: "Dialer", name: str, intent: Intent, call_id: int, number: str) -> None:
        super().__init__(app, name, intent)
        self.dialer, self.call_id, self.number = app, call_id, number
        self.started = app.system.now()

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        return [
            text_view(Bounds(60, screen.top + 300, w - 60, screen.top + 420),
                      self.dialer.label_for(self.number, None), rid("contactgrid_contact_name")),
            text_view(Bounds(60, screen.top + 440, w - 60, screen.top + 520), "Calling…", rid("contactgrid_status_text")),
            button(Bounds(w // 2 - 110, screen.bottom - 400, w // 2 + 110, screen.bottom - 180), "",
                   rid("incall_end_call"), desc="End call", image=True, on_click=self.hang_up),
        ]

    def hang_up(self) -> None:
        seconds = int(self.system.now() - self.started)
        self.dialer.db.update(ContentUri("call_log", ("calls", str(self.call_id))), {"duration": seconds})
        self.finish()

    def on_back(self) -> bool:
        return True  # a call stays on screen until it is ended


class Dialer(App):
    PACKAGE = PACKAGE
    LABEL = "Phone"
    LAUNCHER_ACTIVITY = MAIN
    ACTIVITIES = (MAIN, IN_CALL)
    VERSION_NAME = "143.0.681419853-publicbeta-pixel2024"
    VERSION_CODE = 20168150

    def create_providers(self) -> list[SqliteProvider]:
        return [CallLogProvider()]

    @property
    def db(self) -> CallLogProvider:
        provider = self.providers()[0]
        assert isinstance(provider, CallLogProvider)
        return provider

    def calls(self) -> list[tuple[str, str | None, int]]:
        rows = self.db.db.execute("SELECT number, name, type FROM calls ORDER BY date DESC, _id DESC").fetchall()
        return [(str(n or ""), m, int(t)) for n, m, t in rows]

    def label_for(self, number: str, name: str | None) -> str:
        if name:
            return name
        contacts = self.system.provider("com.android.contacts")
        digits = "".join(c for c in number if c.isdigit())
        if contacts is not None and digits:
            for display, saved in contacts.db.execute("SELECT display_name, data1 FROM phones").fetchall():
                if "".join(c for c in str(saved) if c.isdigit()) == digits:
                    return str(display)
        return number

    def place_call(self, number: str) -> None:
        self.system.start_activity(Intent(ACTION_CALL, data=f"tel:{number}", package=PACKAGE))

    def resolve(self, intent: Intent) -> str | None:
        data = intent.data or ""
        if intent.action == ACTION_CALL and data.startswith("tel:"):
            return IN_CALL
        if intent.action in (ACTION_DIAL, ACTION_VIEW) and (data.startswith("tel:") or (intent.action == ACTION_DIAL and not data)):
            return MAIN
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == IN_CALL:
            number = number_of(intent.data)
            name = self.label_for(number, None)
            uri = self.db.insert(CALLS_URI, {"number": number, "name": None if name == number else name, "type": 2,
                                             "new": 0, "date": int(self.system.now() * 1000)})
            return InCallActivity(self, activity, intent, int(uri.path[-1]), number)
        return DialtactsActivity(self, MAIN, intent, dialpad=intent.action in (ACTION_DIAL, ACTION_VIEW))
