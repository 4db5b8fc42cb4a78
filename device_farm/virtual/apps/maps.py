"""Google Maps (com.google.android.apps.maps): the map with its "Search here" box and
suggestions, a place sheet (Directions, Start, Save, Share), travel modes, turn-by-turn
navigation with Exit, and the Saved tab (it scrolls).

Intents: `android.intent.action.VIEW` with `geo:LAT,LNG?q=QUERY`, `google.navigation:q=DEST&mode=d|w|b`
(starts navigation), `https://maps.google.com/?q=...` and
`https://www.google.com/maps/search/?api=1&query=...` or `/maps/dir/?api=1&destination=...&travelmode=...`.

Virtual-phone simplification: Maps' state is served by a provider
`content://com.google.android.apps.maps/` — `saved_places` (`_id, name, address, list`),
`navigation` (`_id, destination, address, mode` d/w/b, `active`) and `searches` (`_id, query`).
"""

from __future__ import annotations

from typing import Callable
from urllib.parse import parse_qs, unquote_plus, urlparse

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, row_list, scrolled, text_view

PACKAGE = "com.google.android.apps.maps"
MAPS = "com.google.android.maps.MapsActivity"
ROW_HEIGHT = 200
MODES = {"d": "Driving", "w": "Walking", "b": "Cycling"}
TRAVELMODES = {"driving": "d", "walking": "w", "bicycling": "b"}
PLACES: tuple[tuple[str, str], ...] = (
    ("Blue Bottle Coffee", "66 Mint St, San Francisco, CA 94103"),
    ("Dolores Park", "Dolores St & 19th St, San Francisco, CA 94114"),
    ("Ferry Building", "1 Ferry Building, San Francisco, CA 94111"),
    ("Golden Gate Bridge", "Golden Gate Bridge, San Francisco, CA"),
    ("Golden Gate Park", "501 Stanyan St, San Francisco, CA 94117"),
    ("San Francisco International Airport", "San Francisco, CA 94128"),
    ("Tartine Bakery", "600 Guerrero St, San Francisco, CA 94110"),
    ("Whole Foods Market", "2001 Market St, San Francisco, CA 94114"),
    ("Zuni Café", "1658 Market St, San Francisco, CA 94102"),
)


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


class MapsProvider(SqliteProvider):
    AUTHORITY = "com.google.android.apps.maps"
    SCHEMA = """
        CREATE TABLE saved_places (_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
            address TEXT NOT NULL DEFAULT '', list TEXT NOT NULL DEFAULT 'Favorites');
        CREATE TABLE navigation (_id INTEGER PRIMARY KEY AUTOINCREMENT, destination TEXT NOT NULL,
            address TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL DEFAULT 'd', active INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE searches (_id INTEGER PRIMARY KEY AUTOINCREMENT, query TEXT NOT NULL);
    """
    PATHS = {("saved_places",): Table("saved_places"), ("navigation",): Table("navigation"),
             ("searches",): Table("searches")}


class MapsActivity(Activity):
    """One Maps screen: explore (search), saved, place sheet, directions or navigation."""

    def __init__(self, app: "Maps", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.maps = app
        self.query, self.tab, self.first = "", "Explore", 0
        self.place: tuple[str, str] | None = None
        self.directions: str | None = None  # travel mode while the directions panel shows
        self.navigating = False
        self._list, self._rows = Bounds(0, 0, 0, 0), 0

    # --- state changes ---------------------------------------------------------------
    def show(self, query: str) -> None:
        self.place = self.maps.lookup(query)
        self.maps.db._insert_row("searches", {"query": query})
        self.query, self.directions, self.navigating = "", None, False

    def start(self, mode: str) -> None:
        assert self.place is not None
        db = self.maps.db.db
        db.execute("UPDATE navigation SET active = 0")
        db.execute("INSERT INTO navigation (destination, address, mode) VALUES (?, ?, ?)", (*self.place, mode))
        self.navigating, self.directions = True, None

    def exit_navigation(self) -> None:
        self.maps.db.db.execute("UPDATE navigation SET active = 0")
        self.navigating = False

    # --- views ---------------------------------------------------------------------
    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        if self.navigating and self.place is not None:
            mode = self.maps.db.db.execute("SELECT mode FROM navigation WHERE active = 1").fetchone()
            return [text_view(Bounds(40, screen.top + 40, w - 40, screen.top + 240), f"Head toward {self.place[0]}",
                              rid("navigation_instruction")),
                    ViewNode("android.view.View", Bounds(0, screen.top + 260, w, screen.bottom - 300), content_desc="Map"),
                    text_view(Bounds(40, screen.bottom - 280, w - 400, screen.bottom - 180),
                              f"{MODES.get(mode[0] if mode else 'd', 'Driving')} · 12 min", rid("eta_text")),
                    button(Bounds(w - 360, screen.bottom - 280, w - 40, screen.bottom - 140), "Exit",
                           rid("exit_navigation_button"), on_click=self.exit_navigation)]
        views = [edit_text(self, Bounds(40, screen.top + 30, w - 40, screen.top + 170), rid("search_omnibox_text_box"),
                           "Search here", self.query, self._type),
                 ViewNode("android.view.View", Bounds(0, screen.top + 200, w, screen.bottom - 200), content_desc="Map")]
        if self.query:
            rows = [self._row(n, a, lambda n=n: self.show(n)) for n, a in self.maps.suggestions(self.query)]
            rows.append(self._row(f'Search for "{self.query}"', "", lambda q=self.query: self.show(q)))
            views.append(self._list_view(Bounds(0, screen.top + 200, w, screen.bottom - 200), rows))
        elif self.place is not None:
            views.append(self._sheet(screen))
        elif self.tab == "You":
            rows = [self._row(n, f"{lst} · {a}", lambda n=n: self.show(n)) for n, a, lst in self.maps.saved()]
            views.append(text_view(Bounds(40, screen.top + 200, w - 40, screen.top + 300), "Saved", rid("saved_title")))
            views.append(self._list_view(Bounds(0, screen.top + 320, w, screen.bottom - 200), rows))
        tabs = [text_view(Bounds(i * w // 3, screen.bottom - 200, (i + 1) * w // 3, screen.bottom), name, desc=name,
                          on_click=lambda name=name: self._tab(name)) for i, name in enumerate(("Explore", "You", "Contribute"))]
        for tab in tabs:
            tab.selected = tab.text == self.tab
        return views + [group(Bounds(0, screen.bottom - 200, w, screen.bottom), tabs, rid("bottom_navigation"))]

    def _sheet(self, screen: Bounds) -> ViewNode:
        assert self.place is not None
        w, top = screen.right, screen.bottom - 900
        name, address = self.place
        saved = self.maps.is_saved(name)
        children = [text_view(Bounds(40, top + 30, w - 40, top + 130), name, rid("title")),
                    text_view(Bounds(40, top + 140, w - 40, top + 210), address, rid("address"))]
        if self.directions is None:
            labels: tuple[tuple[str, Callable[[], None]], ...] = (
                ("Directions", lambda: setattr(self, "directions", "d")), ("Start", lambda: self.start("d")),
                ("Saved" if saved else "Save", lambda: self.maps.save(name, address)), ("Share", lambda: None))
        else:
            labels = tuple((MODES[m], lambda m=m: setattr(self, "directions", m)) for m in MODES) + (
                ("Start", lambda: self.start(self.directions or "d")),)
        for i, (label, action) in enumerate(labels):
            node = button(Bounds(40 + i * 250, top + 260, 270 + i * 250, top + 380), label,
                          rid(label.lower() + "_button"), desc=label, on_click=action)
            node.selected = self.directions is not None and label == MODES.get(self.directions)
            children.append(node)
        return group(Bounds(0, top, w, screen.bottom - 200), children, rid("place_sheet"), cls="android.widget.FrameLayout")

    def _row(self, title: str, summary: str, on_click: Callable[[], None]) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            return group(b, [text_view(Bounds(60, b.top + 40, b.right - 60, b.top + 110), title, rid("suggestion_title")),
                             text_view(Bounds(60, b.top + 110, b.right - 60, b.top + 170), summary,
                                       rid("suggestion_subtitle"))], cls="android.widget.LinearLayout", on_click=on_click)
        return make

    def _list_view(self, bounds: Bounds, rows: list[Callable[[Bounds], ViewNode]]) -> ViewNode:
        self._list, self._rows = bounds, len(rows)
        return row_list(bounds, rows, ROW_HEIGHT, min(self.first, max(0, len(rows) - 1)), rid("recycler_view"))

    def _type(self, text: str) -> None:
        self.query, self.first = text, 0

    def _tab(self, name: str) -> None:
        self.tab, self.place, self.query, self.first = name, None, "", 0

    def on_scroll(self, dy: int) -> bool:
        if not self._rows:
            self.system.window()
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self._rows, self._list)
        return before != self.first

    def on_back(self) -> bool:
        if self.navigating:
            self.exit_navigation()
        elif self.directions is not None:
            self.directions = None
        elif self.query or self.place is not None or self.tab != "Explore":
            self.query, self.place, self.tab = "", None, "Explore"
        else:
            return False
        return True


class Maps(App):
    PACKAGE = PACKAGE
    LABEL = "Maps"
    LAUNCHER_ACTIVITY = MAPS
    ACTIVITIES = (MAPS,)
    VERSION_NAME = "11.125.0101"
    VERSION_CODE = 1064227431

    def create_providers(self) -> list[SqliteProvider]:
        return [MapsProvider()]

    @property
    def db(self) -> MapsProvider:
        provider = self.providers()[0]
        assert isinstance(provider, MapsProvider)
        return provider

    def saved(self) -> list[tuple[str, str, str]]:
        return [tuple(r) for r in self.db.db.execute("SELECT name, address, list FROM saved_places ORDER BY _id")]  # type: ignore[misc]

    def is_saved(self, name: str) -> bool:
        return self.db.db.execute("SELECT 1 FROM saved_places WHERE name = ?", (name,)).fetchone() is not None

    def save(self, name: str, address: str) -> None:
        if not self.is_saved(name):
            self.db._insert_row("saved_places", {"name": name, "address": address})

    def suggestions(self, query: str) -> list[tuple[str, str]]:
        q = query.lower()
        places = [(n, a) for n, a, _ in self.saved()] + list(PLACES)
        seen: set[str] = set()
        return [(n, a) for n, a in places if (q in n.lower() or q in a.lower()) and not (n in seen or seen.add(n))]

    def lookup(self, query: str) -> tuple[str, str]:
        """The place a search lands on: a saved or known place, else a dropped pin at the text."""
        exact = [p for p in self.suggestions(query) if p[0].lower() == query.lower()]
        found = exact or self.suggestions(query)
        return found[0] if found else (query, query)

    def resolve(self, intent: Intent) -> str | None:
        data = intent.data or ""
        if intent.action == ACTION_VIEW and (data.startswith(("geo:", "google.navigation:")) or data.startswith(
                ("https://maps.google.com", "http://maps.google.com", "https://www.google.com/maps"))):
            return MAPS
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        top = self.system.foreground if self.system.stack else None
        screen = top if isinstance(top, MapsActivity) else MapsActivity(self, activity, intent)
        data = intent.data or ""
        parsed = urlparse(data)
        params = {k: v[0] for k, v in parse_qs(parsed.query if parsed.query else data.partition("?")[2]).items()}
        if data.startswith("google.navigation:"):
            fields = dict(p.partition("=")[::2] for p in data.removeprefix("google.navigation:").split("&"))
            screen.show(unquote_plus(fields.get("q", "")))
            screen.start(fields.get("mode", "d") if fields.get("mode") in MODES else "d")
        elif "destination" in params:
            screen.show(params["destination"])
            screen.directions = TRAVELMODES.get(params.get("travelmode", ""), "d")
        elif params.get("q") or params.get("query"):
            screen.show(params.get("q") or params["query"])
        return None if screen is top else screen
