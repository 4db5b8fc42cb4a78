"""Keep Notes (com.google.android.keep): the notes grid (pinned first, then newest; it
scrolls), a search bar that filters it, the note editor (title and body; Keep saves as you
type and on back, an empty new note is discarded), and shared text: `android.intent.action.SEND`
with `text/plain` (`android.intent.extra.TEXT`, optional `android.intent.extra.SUBJECT` as the
title) creates a note and opens it.

Virtual-phone simplification: Keep's notes live in a provider
`content://com.google.android.keep/notes` (`_id, title, text, pinned, archived, trashed,
created, modified`) so tasks can seed and check them; the real app keeps them private.
"""

from __future__ import annotations

from typing import Any, Callable

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import ComponentName, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, row_list, scrolled, text_view

PACKAGE = "com.google.android.keep"
BROWSE = "com.google.android.keep.activities.BrowseActivity"
EDITOR = "com.google.android.keep.activities.EditorActivity"
SHARE = "com.google.android.keep.activities.ShareReceiverActivity"
ACTION_SEND = "android.intent.action.SEND"
EXTRA_TEXT = "android.intent.extra.TEXT"
EXTRA_SUBJECT = "android.intent.extra.SUBJECT"
NOTES_URI = ContentUri("com.google.android.keep", ("notes",))
ROW_HEIGHT = 260


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


class NotesProvider(SqliteProvider):
    AUTHORITY = "com.google.android.keep"
    SCHEMA = """
        CREATE TABLE notes (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '', pinned INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0, trashed INTEGER NOT NULL DEFAULT 0,
            created INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER) * 1000),
            modified INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER) * 1000));
    """
    PATHS = {("notes",): Table("notes")}


class BrowseActivity(Activity):
    def __init__(self, app: "Keep", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.keep = app
        self.query = ""
        self.first = 0
        self._list, self._rows = Bounds(0, 0, 0, 0), 0

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [edit_text(self, Bounds(40, screen.top + 30, w - 40, screen.top + 170),
                           rid("open_search_bar_text_view"), "Search your notes", self.query, self._search)]
        notes = self.keep.notes(self.query)
        rows = [self._card(note_id, title, text) for note_id, title, text in notes]
        self._list, self._rows = Bounds(0, screen.top + 200, w, screen.bottom - 200), len(rows)
        if rows:
            views.append(row_list(self._list, rows, ROW_HEIGHT, min(self.first, len(rows) - 1),
                                  rid("notes_recycler_view")))
        else:
            views.append(text_view(self._list, "Notes you add appear here" if not self.query else "No matching notes",
                                   rid("empty_view")))
        views.append(button(Bounds(w - 260, screen.bottom - 260, w - 60, screen.bottom - 60), "",
                            rid("new_note_button"), desc="New text note", image=True,
                            on_click=lambda: self.keep.open_editor(None)))
        return views

    def _card(self, note_id: int, title: str, text: str) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            children = []
            if title:
                children.append(text_view(Bounds(60, b.top + 30, b.right - 60, b.top + 100), title,
                                          rid("index_note_title")))
            children.append(text_view(Bounds(60, b.top + 110, b.right - 60, b.bottom - 30), text[:120],
                                      rid("index_note_text_description")))
            return group(Bounds(30, b.top + 10, b.right - 30, b.bottom - 10), children,
                         rid("browse_note_interior_content"), cls="android.widget.FrameLayout",
                         on_click=lambda: self.keep.open_editor(note_id))
        return make

    def _search(self, text: str) -> None:
        self.query, self.first = text, 0

    def on_scroll(self, dy: int) -> bool:
        if not self._rows:
            self.system.window()
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self._rows, self._list)
        return before != self.first

    def on_back(self) -> bool:
        if self.query:
            self.query = ""
            return True
        return False


class EditorActivity(Activity):
    """One note: title and body fields; edits are saved as they are typed."""

    def __init__(self, app: "Keep", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.keep = app
        self.note_id: int | None = intent.extra_int("noteId")
        title, text = app.note(self.note_id) if self.note_id is not None else ("", "")
        self.values = {"title": title, "text": text}
        self.focused = rid("edit_note_text") if self.note_id is None else None

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        return [
            button(Bounds(0, screen.top, 160, screen.top + 160), "", rid("editor_navigation_button"),
                   desc="Navigate up", image=True, on_click=self.close),
            button(Bounds(w - 480, screen.top + 20, w - 340, screen.top + 140), "", rid("menu_pin"), desc="Pin",
                   image=True, on_click=lambda: self._set("pinned", 1)),
            button(Bounds(w - 320, screen.top + 20, w - 180, screen.top + 140), "", rid("menu_archive"),
                   desc="Archive", image=True, on_click=lambda: self._set("archived", 1, close=True)),
            button(Bounds(w - 160, screen.top + 20, w - 20, screen.top + 140), "", rid("menu_delete"),
                   desc="Delete", image=True, on_click=lambda: self._set("trashed", 1, close=True)),
            edit_text(self, Bounds(40, screen.top + 200, w - 40, screen.top + 340), rid("editable_title"), "Title",
                      self.values["title"], lambda t: self._edit("title", t)),
            edit_text(self, Bounds(40, screen.top + 360, w - 40, screen.bottom - 200), rid("edit_note_text"), "Note",
                      self.values["text"], lambda t: self._edit("text", t)),
        ]

    def _edit(self, key: str, value: str) -> None:
        self.values[key] = value
        if self.note_id is None:
            self.note_id = self.keep.db._insert_row("notes", dict(self.values))
        else:
            self.keep.db.db.execute(f"UPDATE notes SET {key} = ?, modified = ? WHERE _id = ?",
                                    (value, int(self.system.now() * 1000), self.note_id))

    def _set(self, column: str, value: int, close: bool = False) -> None:
        if self.note_id is not None:
            self.keep.db.db.execute(f"UPDATE notes SET {column} = ? WHERE _id = ?", (value, self.note_id))
        if close:
            self.finish()

    def close(self) -> None:
        self.finish()


class Keep(App):
    PACKAGE = PACKAGE
    LABEL = "Keep Notes"
    LAUNCHER_ACTIVITY = BROWSE
    ACTIVITIES = (BROWSE, EDITOR, SHARE)
    VERSION_NAME = "5.24.162.03.90"
    VERSION_CODE = 224162030
    SYSTEM_APP = False

    def create_providers(self) -> list[SqliteProvider]:
        return [NotesProvider()]

    @property
    def db(self) -> NotesProvider:
        provider = self.providers()[0]
        assert isinstance(provider, NotesProvider)
        return provider

    def notes(self, query: str = "") -> list[tuple[int, str, str]]:
        like = f"%{query}%"
        rows = self.db.db.execute(
            "SELECT _id, title, text FROM notes WHERE trashed = 0 AND archived = 0 AND (title LIKE ? OR text LIKE ?) "
            "ORDER BY pinned DESC, modified DESC, _id DESC", (like, like)).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def note(self, note_id: int) -> tuple[str, str]:
        row = self.db.db.execute("SELECT title, text FROM notes WHERE _id = ?", (note_id,)).fetchone()
        return (str(row[0]), str(row[1])) if row else ("", "")

    def open_editor(self, note_id: int | None) -> None:
        extras: dict[str, Any] = {} if note_id is None else {"noteId": note_id}
        self.system.start_activity(Intent(None, component=ComponentName(PACKAGE, EDITOR), extras=extras))

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_SEND and (intent.mime_type or "").startswith("text/"):
            return SHARE
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == SHARE:
            text, title = intent.extra_str(EXTRA_TEXT) or "", intent.extra_str(EXTRA_SUBJECT) or ""
            if not text and not title:
                return None
            note_id = self.db._insert_row("notes", {"title": title, "text": text})
            return EditorActivity(self, EDITOR, Intent(None, extras={"noteId": note_id}))
        if activity == EDITOR:
            return EditorActivity(self, activity, intent)
        return BrowseActivity(self, activity, intent)
