"""Messages (com.google.android.apps.messaging): the conversation list, a conversation with
its compose bar ("Text message" field and the Send button), the SENDTO/SEND `smsto:` and
`sms:` intents (body in `sms_body` or `android.intent.extra.TEXT`), and Telephony's SMS
provider `content://sms` (`inbox` and `sent` select by `type`: 1 received, 2 sent).

Columns: `_id, thread_id, address, date` (ms), `read, type, body`. Inserting into
`content://sms/inbox` or `/sent` sets the type; a message joins the thread of its address.
Sending only writes the message to `sent` (the virtual phone has no radio). Names come from
the Contacts provider when the number is saved there.
"""

from __future__ import annotations

from typing import Any, Sequence

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, scrolled, text_view

PACKAGE = "com.google.android.apps.messaging"
LIST = "com.google.android.apps.messaging.ui.ConversationListActivity"
CONVERSATION = "com.google.android.apps.messaging.ui.conversation.ConversationActivity"
LAUNCH_CONVERSATION = "com.google.android.apps.messaging.ui.conversation.LaunchConversationActivity"
SCHEMES = ("smsto:", "sms:", "mmsto:", "mms:")
SEND_ACTIONS = ("android.intent.action.SENDTO", "android.intent.action.SEND", "android.intent.action.VIEW")
TYPES = {"inbox": 1, "sent": 2}
ROW_HEIGHT = 220


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


def address_of(data: str | None) -> str:
    """`smsto:+1%20555%200100` → `+1 555 0100`."""
    from urllib.parse import unquote

    text = data or ""
    for scheme in SCHEMES:
        if text.startswith(scheme):
            text = text[len(scheme):]
            break
    return unquote(text.split("?", 1)[0]).strip()


class SmsProvider(SqliteProvider):
    AUTHORITY = "sms"
    SCHEMA = """
        CREATE TABLE sms (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id INTEGER NOT NULL DEFAULT 0,
            address TEXT, date INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER) * 1000),
            read INTEGER NOT NULL DEFAULT 0, type INTEGER NOT NULL DEFAULT 1, body TEXT);
    """
    PATHS = {(): Table("sms"), ("inbox",): Table("sms"), ("sent",): Table("sms")}

    @staticmethod
    def _box(uri: ContentUri, selection: str | None) -> str | None:
        box = uri.path[0] if uri.path and uri.path[0] in TYPES else None
        if box is None:
            return selection
        clause = f"type = {TYPES[box]}"
        return f"{clause} AND ({selection})" if selection else clause

    def query(self, uri: ContentUri, projection: Sequence[str] | None = None,
              selection: str | None = None, sort: str | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        return super().query(uri, projection, self._box(uri, selection), sort or "date DESC, _id DESC")

    def update(self, uri: ContentUri, values: dict[str, Any], selection: str | None = None) -> int:
        return super().update(uri, values, self._box(uri, selection))

    def delete(self, uri: ContentUri, selection: str | None = None) -> int:
        return super().delete(uri, self._box(uri, selection))

    def insert(self, uri: ContentUri, values: dict[str, Any]) -> ContentUri:
        values = dict(values)
        if uri.path and uri.path[0] in TYPES:
            values["type"] = TYPES[uri.path[0]]
        if not values.get("thread_id"):
            values["thread_id"] = self.thread_for(str(values.get("address") or ""))
        return super().insert(uri, values)

    def thread_for(self, address: str) -> int:
        row = self.db.execute("SELECT thread_id FROM sms WHERE address = ? LIMIT 1", (address,)).fetchone()
        if row is not None:
            return int(row[0])
        return int(self.db.execute("SELECT COALESCE(MAX(thread_id), 0) + 1 FROM sms").fetchone()[0])


class ConversationListActivity(Activity):
    first, total, list_bounds = 0, 0, Bounds(0, 0, 1, 1)  # the scroll position and what it moves over

    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Messages)
        w = screen.right
        views = [text_view(Bounds(40, screen.top + 20, w - 40, screen.top + 160), "Messages",
                           rid("toolbar_title"))]
        top, bottom = screen.top + 200, screen.bottom - 40
        threads = app.threads()
        self.total, self.list_bounds = len(threads), Bounds(0, top, w, bottom)
        self.first = min(self.first, max(0, len(threads) - (bottom - top) // ROW_HEIGHT))
        rows = []
        for i, (address, body, unread) in enumerate(threads[self.first:self.first + (bottom - top) // ROW_HEIGHT]):
            y = top + i * ROW_HEIGHT
            name = text_view(Bounds(200, y + 30, w - 260, y + 110), app.name_for(address),
                             rid("conversation_name"))
            name.selected = bool(unread)
            rows.append(group(Bounds(0, y, w, y + ROW_HEIGHT), [
                name, text_view(Bounds(200, y + 120, w - 60, y + 190), body, rid("conversation_snippet")),
            ], rid("swipeableContainer"), on_click=lambda a=address: app.open_conversation(a)))
        list_bounds = Bounds(0, top, w, bottom)
        if rows:
            views.append(group(list_bounds, rows, rid("list"), cls="androidx.recyclerview.widget.RecyclerView",
                               scrollable=len(threads) > (bottom - top) // ROW_HEIGHT))
        else:
            views.append(text_view(list_bounds, "Once you start a new conversation, you'll see it listed here",
                                   rid("empty_text")))
        views.append(button(Bounds(w - 420, screen.bottom - 240, w - 60, screen.bottom - 80), "Start chat",
                            rid("start_chat_fab"), on_click=lambda: app.open_conversation("")))
        return views

    def on_scroll(self, dy: int) -> bool:
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self.total, self.list_bounds)
        return before != self.first


class ConversationActivity(Activity):
    """One thread: its messages, oldest first, and the compose bar. Without an address the
    top field asks for the recipient, as "Start chat" does."""

    def __init__(self, app: App, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.address = address_of(intent.data)
        self.to = self.address
        self.draft = intent.extra_str("sms_body") or intent.extra_str("android.intent.extra.TEXT") or ""
        self.focused = rid("compose_message_text") if self.address else rid("recipient_text_view")

    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Messages)
        w = screen.right
        views = [button(Bounds(0, screen.top, 160, screen.top + 160), "", desc="Navigate up",
                        image=True, on_click=self.finish)]
        if self.address:
            views.append(text_view(Bounds(180, screen.top, w - 40, screen.top + 160),
                                   app.name_for(self.address), rid("conversation_title")))
        else:
            views.append(edit_text(self, Bounds(180, screen.top + 20, w - 40, screen.top + 140),
                                   rid("recipient_text_view"), "Type name, phone number, or email",
                                   self.to, lambda t: setattr(self, "to", t)))
        compose_top = screen.bottom - 200
        messages = app.messages(self.address) if self.address else []
        per_screen = (compose_top - screen.top - 200) // 180
        bubbles = []
        for i, (kind, body) in enumerate(messages[-per_screen:]):
            y = screen.top + 200 + i * 180
            left, right = (60, w - 300) if kind == 1 else (300, w - 60)
            bubbles.append(text_view(Bounds(left, y, right, y + 150), body, rid("message_text"),
                                     desc=("Received: " if kind == 1 else "Sent: ") + body))
        views.append(group(Bounds(0, screen.top + 180, w, compose_top), bubbles, rid("messages_list"),
                           cls="androidx.recyclerview.widget.RecyclerView",
                           scrollable=len(messages) > per_screen))
        views.append(edit_text(self, Bounds(40, compose_top + 30, w - 220, compose_top + 170),
                               rid("compose_message_text"), "Text message", self.draft,
                               lambda t: setattr(self, "draft", t)))
        views.append(button(Bounds(w - 200, compose_top + 30, w - 40, compose_top + 170), "",
                            rid("send_message_button_icon"), desc="Send SMS", image=True,
                            on_click=self.send))
        return views

    def send(self) -> None:
        app = self.app
        assert isinstance(app, Messages)
        to, body = self.to.strip(), self.draft.strip()
        if not to or not body:
            return
        app.db.insert(ContentUri("sms", ("sent",)), {"address": to, "body": body, "read": 1,
                                                      "date": int(self.system.now() * 1000)})
        self.address, self.draft = to, ""
        self.focused = rid("compose_message_text")


class Messages(App):
    PACKAGE = PACKAGE
    LABEL = "Messages"
    LAUNCHER_ACTIVITY = LIST
    ACTIVITIES = (LIST, CONVERSATION, LAUNCH_CONVERSATION)
    VERSION_NAME = "messages.android_20240920_00_RC00.phone_dynamic"
    VERSION_CODE = 242015044

    def create_providers(self) -> list[SqliteProvider]:
        return [SmsProvider()]

    @property
    def db(self) -> SmsProvider:
        provider = self.providers()[0]
        assert isinstance(provider, SmsProvider)
        return provider

    def threads(self) -> list[tuple[str, str, int]]:
        """(address, latest body, unread count) per thread, newest first."""
        rows = self.db.db.execute(
            "SELECT address, body, (SELECT COUNT(*) FROM sms u WHERE u.thread_id = s.thread_id AND u.read = 0) "
            "FROM sms s WHERE _id = (SELECT _id FROM sms t WHERE t.thread_id = s.thread_id "
            "ORDER BY date DESC, _id DESC LIMIT 1) ORDER BY date DESC, _id DESC").fetchall()
        return [(str(a or ""), str(b or ""), int(n)) for a, b, n in rows]

    def messages(self, address: str) -> list[tuple[int, str]]:
        thread = self.db.thread_for(address)
        rows = self.db.db.execute("SELECT type, body FROM sms WHERE thread_id = ? ORDER BY date, _id",
                                  (thread,)).fetchall()
        return [(int(t), str(b or "")) for t, b in rows]

    def name_for(self, address: str) -> str:
        contacts = self.system.provider("com.android.contacts")
        if contacts is not None and address:
            digits = "".join(c for c in address if c.isdigit())
            for name, number in contacts.db.execute("SELECT display_name, data1 FROM phones").fetchall():
                if digits and "".join(c for c in str(number) if c.isdigit()) == digits:
                    return str(name)
        return address

    def open_conversation(self, address: str) -> None:
        if address:
            self.db.db.execute("UPDATE sms SET read = 1 WHERE thread_id = ?", (self.db.thread_for(address),))
        self.system.start_activity(Intent("android.intent.action.SENDTO", data=f"smsto:{address}",
                                          package=PACKAGE))

    def resolve(self, intent: Intent) -> str | None:
        if intent.action in SEND_ACTIONS and (intent.data or "").startswith(SCHEMES):
            return LAUNCH_CONVERSATION
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity in (LAUNCH_CONVERSATION, CONVERSATION):
            return ConversationActivity(self, CONVERSATION, intent)
        return ConversationListActivity(self, activity, intent)
