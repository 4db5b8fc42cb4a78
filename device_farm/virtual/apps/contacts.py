"""Contacts (com.google.android.contacts): the contact list, the editor (from the
"Create contact" button or an INSERT intent with `name`/`phone`/`email` extras, saved on
"Save"), a contact's details, and the provider `com.android.contacts`.

Provider paths: `contacts` (`_id, display_name, has_phone_number, starred`),
`data/phones` (`_id, contact_id, display_name, data1` = number, `data2` = type),
`data/emails` (same shape, `data1` = address). Virtual-phone simplification: inserting
into `raw_contacts` with binds `display_name` and optionally `phone`/`email` creates the
contact and its data rows in one step (Android would need a raw contact plus `data`
inserts); inserting into `contacts` is refused as on Android.
"""

from __future__ import annotations

from typing import Any

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, ProviderError, SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, text_view

PACKAGE = "com.google.android.contacts"
PEOPLE = "com.android.contacts.activities.PeopleActivity"
EDITOR = "com.android.contacts.activities.ContactEditorActivity"
DETAILS = "com.android.contacts.quickcontact.QuickContactActivity"
ACTION_INSERT = "android.intent.action.INSERT"
INSERT_TYPES = ("vnd.android.cursor.dir/contact", "vnd.android.cursor.dir/raw_contact",
                "vnd.android.cursor.dir/person")
CONTACTS_PREFIX = "content://com.android.contacts/contacts"
ROW_HEIGHT = 180


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


class ContactsProvider(SqliteProvider):
    AUTHORITY = "com.android.contacts"
    SCHEMA = """
        CREATE TABLE contacts (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, display_name TEXT,
            has_phone_number INTEGER NOT NULL DEFAULT 0, starred INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE data (
            _id INTEGER PRIMARY KEY AUTOINCREMENT,
            contact_id INTEGER NOT NULL REFERENCES contacts(_id) ON DELETE CASCADE,
            mimetype TEXT NOT NULL, data1 TEXT, data2 INTEGER);
        CREATE VIEW phones AS SELECT d._id AS _id, d.contact_id AS contact_id,
            c.display_name AS display_name, d.data1 AS data1, d.data2 AS data2
            FROM data d JOIN contacts c ON c._id = d.contact_id
            WHERE d.mimetype = 'vnd.android.cursor.item/phone_v2';
        CREATE VIEW emails AS SELECT d._id AS _id, d.contact_id AS contact_id,
            c.display_name AS display_name, d.data1 AS data1, d.data2 AS data2
            FROM data d JOIN contacts c ON c._id = d.contact_id
            WHERE d.mimetype = 'vnd.android.cursor.item/email_v2';
        CREATE TRIGGER contact_gone AFTER DELETE ON contacts
            BEGIN DELETE FROM data WHERE contact_id = OLD._id; END;
        PRAGMA foreign_keys = ON;
    """
    PATHS = {
        ("contacts",): Table("contacts"),
        ("raw_contacts",): Table("contacts"),
        ("data", "phones"): Table("phones", writable=False),
        ("data", "emails"): Table("emails", writable=False),
    }

    def insert(self, uri: ContentUri, values: dict[str, Any]) -> ContentUri:
        if uri.path != ("raw_contacts",):
            if uri.path == ("contacts",):
                raise ProviderError("java.lang.UnsupportedOperationException: "
                                    "Aggregate contacts are created automatically")
            return super().insert(uri, values)
        values = dict(values)
        phone, email = values.pop("phone", None), values.pop("email", None)
        contact_id = self.add_contact(values, phone, email)
        return ContentUri(uri.authority, ("raw_contacts", str(contact_id)))

    def add_contact(self, values: dict[str, Any], phone: str | None, email: str | None) -> int:
        values = {**values, "has_phone_number": 1 if phone else 0}
        contact_id = self._insert_row("contacts", values)
        if phone:
            self._insert_row("data", {"contact_id": contact_id, "data1": phone, "data2": 2,
                                      "mimetype": "vnd.android.cursor.item/phone_v2"})
        if email:
            self._insert_row("data", {"contact_id": contact_id, "data1": email, "data2": 1,
                                      "mimetype": "vnd.android.cursor.item/email_v2"})
        return contact_id


class PeopleListActivity(Activity):
    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Contacts)
        w = screen.right
        views = [text_view(Bounds(40, screen.top + 20, w - 40, screen.top + 160), "Search contacts",
                           rid("open_search_bar_text_view"))]
        top = screen.top + 200
        rows = [
            group(Bounds(0, top + i * ROW_HEIGHT, w, top + (i + 1) * ROW_HEIGHT),
                  [text_view(Bounds(200, top + i * ROW_HEIGHT + 50, w - 40, top + i * ROW_HEIGHT + 130),
                             name or "(No name)", rid("cliv_name_textview"))],
                  on_click=lambda cid=cid: app.open_details(cid))
            for i, (cid, name) in enumerate(app.contact_names())
        ]
        list_bounds = Bounds(0, top, w, screen.bottom)
        if rows:
            views.append(group(list_bounds, rows, rid("list"), cls="androidx.recyclerview.widget.RecyclerView",
                               scrollable=len(rows) > 10))
        else:
            views.append(text_view(list_bounds, "No contacts", rid("empty_view")))
        views.append(button(Bounds(w - 260, screen.bottom - 260, w - 60, screen.bottom - 60), "",
                            rid("floating_action_button"), desc="Create contact", image=True,
                            on_click=lambda: self.system.start_activity(
                                Intent(ACTION_INSERT, mime_type=INSERT_TYPES[0], package=PACKAGE))))
        return views


class ContactEditorActivity(Activity):
    """Name, phone and email fields; "Save" writes the contact and closes the editor."""

    FIELDS = (("name", "editor_name", "Name"), ("phone", "editor_phone", "Phone"),
              ("email", "editor_email", "Email"))

    def __init__(self, app: App, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.values = {key: intent.extra_str(key) or "" for key, _, _ in self.FIELDS}
        self.focused = rid("editor_name")

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [
            button(Bounds(0, screen.top, 160, screen.top + 160), "", rid("editor_menu_cancel"),
                   desc="Cancel", image=True, on_click=self.finish),
            text_view(Bounds(180, screen.top, 700, screen.top + 160), "Create contact", rid("title")),
            button(Bounds(w - 260, screen.top + 20, w - 40, screen.top + 140), "Save",
                   rid("editor_menu_save_button"), on_click=self.save),
        ]
        for i, (key, name, hint) in enumerate(self.FIELDS):
            top = screen.top + 260 + i * 200
            views.append(edit_text(self, Bounds(60, top, w - 60, top + 160), rid(name), hint,
                                   self.values[key], lambda text, key=key: self.values.__setitem__(key, text)))
        return views

    def save(self) -> None:
        app = self.app
        assert isinstance(app, Contacts)
        name, phone, email = (self.values[k].strip() for k in ("name", "phone", "email"))
        if name or phone or email:
            app.db.add_contact({"display_name": name or phone or email}, phone or None, email or None)
        self.finish()


class ContactDetailsActivity(Activity):
    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Contacts)
        contact_id = int((self.intent.data or "0").rstrip("/").rsplit("/", 1)[-1] or 0)
        name, phones = app.details(contact_id)
        views = [text_view(Bounds(60, screen.top + 300, screen.right - 60, screen.top + 420), name,
                           rid("large_title"))]
        for i, phone in enumerate(phones):
            top = screen.top + 500 + i * 160
            views.append(text_view(Bounds(60, top, screen.right - 60, top + 120), phone, rid("header")))
        return views


class Contacts(App):
    PACKAGE = PACKAGE
    LABEL = "Contacts"
    LAUNCHER_ACTIVITY = PEOPLE
    ACTIVITIES = (PEOPLE, EDITOR, DETAILS)
    VERSION_NAME = "4.22.37.586680692"
    VERSION_CODE = 2252060

    def create_providers(self) -> list[SqliteProvider]:
        return [ContactsProvider()]

    @property
    def db(self) -> ContactsProvider:
        provider = self.providers()[0]
        assert isinstance(provider, ContactsProvider)
        return provider

    def contact_names(self) -> list[tuple[int, str]]:
        rows = self.db.db.execute("SELECT _id, display_name FROM contacts "
                                  "ORDER BY display_name COLLATE NOCASE, _id").fetchall()
        return [(int(r[0]), str(r[1] or "")) for r in rows]

    def details(self, contact_id: int) -> tuple[str, list[str]]:
        row = self.db.db.execute("SELECT display_name FROM contacts WHERE _id = ?", (contact_id,)).fetchone()
        phones = self.db.db.execute("SELECT data1 FROM phones WHERE contact_id = ?", (contact_id,)).fetchall()
        return (str(row[0] or "") if row else "", [str(p[0]) for p in phones])

    def open_details(self, contact_id: int) -> None:
        self.system.start_activity(Intent(ACTION_VIEW, data=f"{CONTACTS_PREFIX}/{contact_id}", package=PACKAGE))

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_INSERT and (intent.mime_type in INSERT_TYPES or (
                intent.data or "").startswith(CONTACTS_PREFIX)):
            return EDITOR
        if intent.action == ACTION_VIEW and (intent.data or "").startswith(CONTACTS_PREFIX + "/"):
            return DETAILS
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == EDITOR:
            return ContactEditorActivity(self, activity, intent)
        if activity == DETAILS:
            return ContactDetailsActivity(self, activity, intent)
        return PeopleListActivity(self, activity, intent)
