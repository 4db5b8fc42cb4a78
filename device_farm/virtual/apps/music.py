"""YouTube Music (com.google.android.apps.youtube.music): Home's quick picks, search, the
Library's playlists, a playlist page with Play, the mini player and Now playing with
Previous / Play-Pause / Next. Playback shows in the UI and in `dumpsys media_session`
(PlaybackState 3 playing, 2 paused). `android.media.action.MEDIA_PLAY_FROM_SEARCH` with
`query` (and `android.intent.extra.focus` = `vnd.android.cursor.item/playlist` for a playlist)
starts playing the best match, as voice assistants ask music apps to.

Virtual-phone simplification: the library is a provider
`content://com.google.android.apps.youtube.music/` — `songs` (`_id, title, artist, album`),
`playlists` (`_id, name`), `playlist_items` (`_id, playlist, title`: names, not ids, so seeds stay
readable) and `player` (`_id, title, artist, playlist, state` playing/paused).
"""

from __future__ import annotations

import sqlite3
from typing import Callable

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, row_list, scrolled, text_view

PACKAGE = "com.google.android.apps.youtube.music"
MUSIC = "com.google.android.apps.youtube.music.activities.MusicActivity"
PLAY_FROM_SEARCH = "android.media.action.MEDIA_PLAY_FROM_SEARCH"
FOCUS_PLAYLIST = "vnd.android.cursor.item/playlist"
ROW_HEIGHT = 180
CATALOGUE = (
    ("Blinding Lights", "The Weeknd", "After Hours"), ("Levitating", "Dua Lipa", "Future Nostalgia"),
    ("As It Was", "Harry Styles", "Harry's House"), ("Bad Guy", "Billie Eilish", "When We All Fall Asleep"),
    ("Heat Waves", "Glass Animals", "Dreamland"), ("Shape of You", "Ed Sheeran", "Divide"),
    ("Don't Start Now", "Dua Lipa", "Future Nostalgia"), ("Save Your Tears", "The Weeknd", "After Hours"),
    ("Bohemian Rhapsody", "Queen", "A Night at the Opera"), ("Hotel California", "Eagles", "Hotel California"),
    ("Dreams", "Fleetwood Mac", "Rumours"), ("Mr. Brightside", "The Killers", "Hot Fuss"),
    ("Eye of the Tiger", "Survivor", "Eye of the Tiger"), ("Lose Yourself", "Eminem", "8 Mile"),
    ("Stronger", "Kanye West", "Graduation"), ("Till I Collapse", "Eminem", "The Eminem Show"),
    ("Africa", "Toto", "Toto IV"), ("Take On Me", "a-ha", "Hunting High and Low"),
    ("Clair de Lune", "Claude Debussy", "Suite bergamasque"), ("Weightless", "Marconi Union", "Weightless"),
    ("Holocene", "Bon Iver", "Bon Iver"), ("Riptide", "Vance Joy", "Dream Your Life Away"),
    ("Good 4 U", "Olivia Rodrigo", "SOUR"), ("Anti-Hero", "Taylor Swift", "Midnights"),
)


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


class MusicProvider(SqliteProvider):
    AUTHORITY = "com.google.android.apps.youtube.music"
    SCHEMA = """
        CREATE TABLE songs (_id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, artist TEXT NOT NULL,
            album TEXT NOT NULL DEFAULT '');
        CREATE TABLE playlists (_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);
        CREATE TABLE playlist_items (_id INTEGER PRIMARY KEY AUTOINCREMENT, playlist TEXT NOT NULL, title TEXT NOT NULL);
        CREATE TABLE player (_id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, artist TEXT NOT NULL DEFAULT '',
            playlist TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT 'playing');
    """
    PATHS = {(name,): Table(name) for name in ("songs", "playlists", "playlist_items", "player")}

    def __init__(self) -> None:
        super().__init__()
        self.db.executemany("INSERT INTO songs (title, artist, album) VALUES (?, ?, ?)", CATALOGUE)


class MusicActivity(Activity):
    def __init__(self, app: "Music", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.music = app
        self.tab, self.playlist, self.query = "Home", "", None  # query None: no search box
        self.now_playing, self.first = False, 0
        self._list, self._rows = Bounds(0, 0, 0, 0), 0

    def build(self, screen: Bounds) -> list[ViewNode]:
        w, m = screen.right, self.music
        current = m.current()
        if self.now_playing and current is not None:
            return self._now_playing(screen, current)
        views: list[ViewNode] = [button(Bounds(w - 180, screen.top + 20, w - 40, screen.top + 160), "",
                                        rid("action_search_button"), desc="Search", image=True,
                                        on_click=lambda: self._search(""))]
        top = screen.top + 180
        if self.query is not None:
            views.append(edit_text(self, Bounds(40, top, w - 200, top + 140), rid("search_edit_text"),
                                   "Search songs, albums, artists", self.query, self._search))
            rows = [self._song_row(t, a, "") for t, a in m.songs(self.query)] if self.query else []
            top += 160
        elif self.playlist:
            items = m.playlist_songs(self.playlist)
            views += [text_view(Bounds(40, top, w - 40, top + 120), self.playlist, rid("playlist_title")),
                      text_view(Bounds(40, top + 120, w - 40, top + 180), f"{len(items)} songs", rid("playlist_subtitle")),
                      button(Bounds(40, top + 200, 400, top + 320), "Play", rid("play_button"),
                             on_click=lambda: m.play_playlist(self.playlist))]
            rows = [self._song_row(t, a, self.playlist) for t, a in items]
            top += 340
        elif self.tab == "Library":
            views.append(text_view(Bounds(40, top, w - 40, top + 120), "Playlists", rid("library_title")))
            rows = [self._row(name, f"Playlist • {count} songs", lambda n=name: self._open(n))
                    for name, count in m.playlists()]
            top += 140
        else:
            views.append(text_view(Bounds(40, top, w - 40, top + 120), "Quick picks", rid("shelf_title")))
            rows = [self._song_row(t, a, "") for t, a in m.songs("")]
            top += 140
        bottom = screen.bottom - 200 - (180 if current else 0)
        self._list, self._rows = Bounds(0, top, w, bottom), len(rows)
        views.append(row_list(self._list, rows, ROW_HEIGHT, min(self.first, max(0, len(rows) - 1)), rid("results_list")))
        if current is not None:
            views.append(self._mini_player(Bounds(0, bottom, w, bottom + 180), current))
        tabs = [text_view(Bounds(i * w // 3, screen.bottom - 200, (i + 1) * w // 3, screen.bottom), name, desc=name,
                          on_click=lambda name=name: self._tab(name)) for i, name in enumerate(("Home", "Explore", "Library"))]
        for tab in tabs:
            tab.selected = tab.text == self.tab
        return views + [group(Bounds(0, screen.bottom - 200, w, screen.bottom), tabs, rid("pivot_bar"))]

    def _play_pause(self, b: Bounds, playing: bool) -> ViewNode:
        return button(b, "", rid("play_pause_replay_button"), desc="Pause" if playing else "Play", image=True,
                      on_click=self.music.toggle)

    def _mini_player(self, b: Bounds, current: tuple[str, str, str, str]) -> ViewNode:
        title, artist, _, state = current
        return group(b, [text_view(Bounds(40, b.top + 20, b.right - 260, b.top + 90), title, rid("mini_player_title")),
                         text_view(Bounds(40, b.top + 90, b.right - 260, b.top + 160), artist, rid("mini_player_subtitle")),
                         self._play_pause(Bounds(b.right - 220, b.top + 20, b.right - 60, b.top + 160), state == "playing")],
                     rid("mini_player"), cls="android.widget.FrameLayout", on_click=lambda: setattr(self, "now_playing", True))

    def _now_playing(self, screen: Bounds, current: tuple[str, str, str, str]) -> list[ViewNode]:
        w, (title, artist, playlist, state) = screen.right, current
        y = screen.top + 1300
        return [button(Bounds(0, screen.top, 160, screen.top + 160), "", rid("player_collapse_button"), desc="Minimize",
                       image=True, on_click=lambda: setattr(self, "now_playing", False)),
                text_view(Bounds(60, screen.top + 200, w - 60, screen.top + 280), f"Playing from {playlist}" if playlist else "",
                          rid("player_queue_title")),
                ViewNode("android.widget.ImageView", Bounds(120, screen.top + 320, w - 120, screen.top + 1100),
                         resource_id=rid("player_artwork"), content_desc="Album art"),
                text_view(Bounds(60, screen.top + 1120, w - 60, screen.top + 1200), title, rid("title")),
                text_view(Bounds(60, screen.top + 1200, w - 60, screen.top + 1270), artist, rid("subtitle")),
                button(Bounds(160, y, 360, y + 200), "", rid("player_control_previous_button"), desc="Previous",
                       image=True, on_click=lambda: self.music.skip(-1)),
                self._play_pause(Bounds(440, y, 640, y + 200), state == "playing"),
                button(Bounds(720, y, 920, y + 200), "", rid("player_control_next_button"), desc="Next", image=True,
                       on_click=lambda: self.music.skip(1))]

    def _row(self, title: str, subtitle: str, on_click: Callable[[], None]) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            return group(b, [text_view(Bounds(200, b.top + 30, b.right - 60, b.top + 100), title, rid("title")),
                             text_view(Bounds(200, b.top + 100, b.right - 60, b.top + 160), subtitle, rid("subtitle"))],
                         cls="android.widget.LinearLayout", on_click=on_click)
        return make

    def _song_row(self, title: str, artist: str, playlist: str) -> Callable[[Bounds], ViewNode]:
        return self._row(title, f"Song • {artist}", lambda: self.music.play(title, playlist))

    def _search(self, text: str) -> None:
        self.query, self.first, self.focused = text, 0, rid("search_edit_text")

    def _tab(self, name: str) -> None:
        self.tab, self.playlist, self.query, self.first = name, "", None, 0

    def _open(self, playlist: str) -> None:
        self.playlist, self.first = playlist, 0

    def on_scroll(self, dy: int) -> bool:
        if not self._rows:
            self.system.window()
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self._rows, self._list)
        return before != self.first

    def on_back(self) -> bool:
        if self.now_playing:
            self.now_playing = False
        elif self.query is not None:
            self.query = None
        elif self.playlist:
            self.playlist = ""
        elif self.tab != "Home":
            self.tab = "Home"
        else:
            return False
        return True


class Music(App):
    PACKAGE = PACKAGE
    LABEL = "YouTube Music"
    LAUNCHER_ACTIVITY = MUSIC
    ACTIVITIES = (MUSIC,)
    VERSION_NAME = "7.02.51"
    VERSION_CODE = 70251240
    SYSTEM_APP = False

    def create_providers(self) -> list[SqliteProvider]:
        return [MusicProvider()]

    @property
    def sql(self) -> sqlite3.Connection:
        return self.providers()[0].db

    def songs(self, query: str) -> list[tuple[str, str]]:
        like = f"%{query}%"
        return [tuple(r) for r in self.sql.execute(  # type: ignore[misc]
            "SELECT title, artist FROM songs WHERE title LIKE ? OR artist LIKE ? OR album LIKE ? ORDER BY _id",
            (like, like, like))]

    def playlists(self) -> list[tuple[str, int]]:
        return [tuple(r) for r in self.sql.execute(  # type: ignore[misc]
            "SELECT p.name, (SELECT COUNT(*) FROM playlist_items i WHERE i.playlist = p.name) FROM playlists p ORDER BY p.name")]

    def playlist_songs(self, playlist: str) -> list[tuple[str, str]]:
        return [(r[0], r[1] or "") for r in self.sql.execute(
            "SELECT i.title, (SELECT artist FROM songs s WHERE s.title = i.title) FROM playlist_items i "
            "WHERE i.playlist = ? ORDER BY i._id", (playlist,))]

    def current(self) -> tuple[str, str, str, str] | None:
        row = self.sql.execute("SELECT title, artist, playlist, state FROM player ORDER BY _id DESC LIMIT 1").fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def play(self, title: str, playlist: str = "") -> None:
        artist = next((a for t, a in self.songs(title) if t == title), "")
        self.sql.execute("DELETE FROM player")
        self.sql.execute("INSERT INTO player (title, artist, playlist, state) VALUES (?, ?, ?, 'playing')",
                         (title, artist, playlist))

    def play_playlist(self, playlist: str) -> bool:
        items = self.playlist_songs(playlist)
        if items:
            self.play(items[0][0], playlist)
        return bool(items)

    def toggle(self) -> None:
        self.sql.execute("UPDATE player SET state = CASE state WHEN 'playing' THEN 'paused' ELSE 'playing' END")

    def skip(self, step: int) -> None:
        current = self.current()
        if current is None:
            return
        queue = [t for t, _ in (self.playlist_songs(current[2]) if current[2] else self.songs(""))]
        if current[0] in queue:
            self.play(queue[(queue.index(current[0]) + step) % len(queue)], current[2])

    def media_session(self) -> str | None:
        current = self.current()
        if current is None:
            return None
        title, artist, playlist, state = current
        code = 3 if state == "playing" else 2
        return (f"  {PACKAGE}/MediaSessionCompat (userId=0)\n    package={PACKAGE}\n    active=true\n"
                f"    state=PlaybackState {{state={code}, position=0, buffered position=0, speed={1.0 if code == 3 else 0.0}, "
                "actions=3669879, custom actions=[], active item id=0, error=null}\n"
                f"    metadata: size=6, description={title}, {artist}, {playlist or 'YouTube Music'}\n")

    def resolve(self, intent: Intent) -> str | None:
        return MUSIC if intent.action == PLAY_FROM_SEARCH else None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        screen = MusicActivity(self, activity, intent)
        if intent.action == PLAY_FROM_SEARCH:
            query = intent.extra_str("query") or ""
            focus = intent.extra_str("android.intent.extra.focus") or ""
            names = [n for n, _ in self.playlists() if query.lower() in n.lower()] if query else []
            if names and (focus == FOCUS_PLAYLIST or not self.songs(query)):
                self.play_playlist(names[0])
            elif self.songs(query):
                self.play(self.songs(query)[0][0])
            screen.now_playing = self.current() is not None
        return screen
