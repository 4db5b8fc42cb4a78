"""Gmail (com.google.android.gm): the inbox, a message's view, the composer (from the
"Compose" button, a SENDTO `mailto:` intent, or SEND with `android.intent.extra.EMAIL`,
`SUBJECT`, `TEXT`, `CC`, `BCC` extras), and its mail store.

Virtual-phone simplification: Gmail keeps mail in a private database, not in a public
provider; here it is served as `content://com.google.android.gm/messages` (`_id, folder`
(`inbox`/`sent`), `from_address, to_address, subject, body, date` (ms), `read`), so tasks can
seed the inbox and checks can read what was sent. "Send" moves the draft to `sent`.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import ContentUri, SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, scrolled, text_view

PACKAGE = "com.google.android.gm"
INBOX = "com.google.android.gm.ConversationListActivityGmail"
COMPOSE = "com.google.android.gm.ComposeActivityGmail"
ACTION_SEND = "android.intent.action.SEND"
ACTION_SENDTO = "android.intent.action.SENDTO"
EXTRA = "android.intent.extra."
MESSAGES_URI = ContentUri(PACKAGE, ("messages",))
ACCOUNT = "me@gmail.com"
ROW_HEIGHT = 240


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


def _addresses(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value or "")


def draft_from(intent: Intent) -> dict[str, str]:
    """To, subject and body from a `mailto:` URI and the SEND/SENDTO extras (extras win)."""
    draft = {"to": "", "subject": "", "body": ""}
    data = intent.data or ""
    if data.startswith("mailto:"):
        address, _, query = data[len("mailto:"):].partition("?")
        draft["to"] = unquote(address)
        params = parse_qs(query)
        draft["subject"] = params.get("subject", [""])[0]
        draft["body"] = params.get("body", [""])[0]
    if EXTRA + "EMAIL" in intent.extras:
        draft["to"] = _addresses(intent.extras[EXTRA + "EMAIL"])
    draft["subject"] = intent.extra_str(EXTRA + "SUBJECT") or draft["subject"]
    draft["body"] = intent.extra_str(EXTRA + "TEXT") or draft["body"]
    return draft


class GmailProvider(SqliteProvider):
    AUTHORITY = PACKAGE
    SCHEMA = """
        CREATE TABLE messages (
            _id INTEGER PRIMARY KEY AUTOINCREMENT, folder TEXT NOT NULL DEFAULT 'inbox',
            from_address TEXT NOT NULL DEFAULT '', to_address TEXT NOT NULL DEFAULT '',
            subject TEXT NOT NULL DEFAULT '', body TEXT NOT NULL DEFAULT '',
            date INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER) * 1000),
            read INTEGER NOT NULL DEFAULT 0);
    """
    PATHS = {("messages",): Table("messages")}


class InboxActivity(Activity):
    first, total, list_bounds = 0, 0, Bounds(0, 0, 1, 1)  # the scroll position and what it moves over

    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Gmail)
        w = screen.right
        views = [text_view(Bounds(40, screen.top + 20, w - 40, screen.top + 160), "Search in mail",
                           rid("open_search")),
                 text_view(Bounds(40, screen.top + 170, w - 40, screen.top + 230), "Primary", rid("folder_name"))]
        top, bottom = screen.top + 240, screen.bottom - 40
        mails = app.folder("inbox")
        self.total, self.list_bounds = len(mails), Bounds(0, top, w, bottom)
        self.first = min(self.first, max(0, len(mails) - (bottom - top) // ROW_HEIGHT))
        rows = []
        for i, (mail_id, sender, subject, body, read) in enumerate(mails[self.first:self.first + (bottom - top) // ROW_HEIGHT]):
            y = top + i * ROW_HEIGHT
            who = text_view(Bounds(200, y + 20, w - 60, y + 90), sender, rid("senders"))
            who.selected = not read
            rows.append(group(Bounds(0, y, w, y + ROW_HEIGHT), [
                who, text_view(Bounds(200, y + 95, w - 60, y + 160), subject, rid("subject")),
                text_view(Bounds(200, y + 165, w - 60, y + 225), body[:80], rid("snippet")),
            ], rid("viewified_conversation_item_view"), on_click=lambda m=mail_id: app.open_mail(m)))
        list_bounds = Bounds(0, top, w, bottom)
        if rows:
            views.append(group(list_bounds, rows, rid("thread_list_view"),
                               cls="androidx.recyclerview.widget.RecyclerView", scrollable=len(mails) > (bottom - top) // ROW_HEIGHT))
        else:
            views.append(text_view(list_bounds, "Nothing in Primary", rid("empty_text")))
        views.append(button(Bounds(w - 420, screen.bottom - 240, w - 60, screen.bottom - 80), "Compose",
                            rid("compose_button"), on_click=lambda: self.system.start_activity(
                                Intent(ACTION_SENDTO, data="mailto:", package=PACKAGE))))
        return views


    def on_scroll(self, dy: int) -> bool:
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self.total, self.list_bounds)
        return before != self.first


class MessageActivity(Activity):
    def build(self, screen: Bounds) -> list[ViewNode]:
        app = self.app
        assert isinstance(app, Gmail)
        mail_id = int((self.intent.data or "0").rsplit("/", 1)[-1] or 0)
        row = app.db.db.execute("SELECT from_address, subject, body FROM messages WHERE _id = ?", (mail_id,)).fetchone()
        sender, subject, body = row if row else ("", "", "")
        w = screen.right
        return [
            button(Bounds(0, screen.top, 160, screen.top + 160), "", desc="Navigate up", image=True, on_click=self.finish),
            text_view(Bounds(60, screen.top + 180, w - 60, screen.top + 300), subject, rid("subject_and_folder_view")),
            text_view(Bounds(60, screen.top + 320, w - 60, screen.top + 400), sender, rid("sender_name")),
            text_view(Bounds(60, screen.top + 440, w - 60, screen.bottom - 300), body, rid("message_body")),
            button(Bounds(60, screen.bottom - 260, 500, screen.bottom - 120), "Reply", rid("reply_button"),
                   on_click=lambda: self.system.start_activity(Intent(
                       ACTION_SENDTO, data=f"mailto:{sender}", package=PACKAGE,
                       extras={EXTRA + "SUBJECT": subject if subject.startswith("Re: ") else f"Re: {subject}"}))),
        ]


class ComposeActivity(Activity):
    FIELDS = (("to", "to", "To"), ("subject", "subject", "Subject"), ("body", "body", "Compose email"))

    def __init__(self, app: App, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.draft = draft_from(intent)
        self.focused = rid("body" if self.draft["to"] else "to")

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [
            button(Bounds(0, screen.top, 160, screen.top + 160), "", desc="Navigate up", image=True, on_click=self.finish),
            text_view(Bounds(180, screen.top, 600, screen.top + 160), "Compose", rid("compose_title")),
            button(Bounds(w - 200, screen.top + 20, w - 40, screen.top + 140), "", rid("send"), desc="Send",
                   image=True, on_click=self.send),
            text_view(Bounds(60, screen.top + 180, w - 60, screen.top + 280), ACCOUNT, rid("from_account_name")),
        ]
        for i, (key, name, hint) in enumerate(self.FIELDS):
            top = screen.top + 300 + i * 180
            bottom = screen.bottom - 60 if key == "body" else top + 160
            views.append(edit_text(self, Bounds(60, top, w - 60, bottom), rid(name), hint, self.draft[key],
                                   lambda text, key=key: self.draft.__setitem__(key, text)))
        return views

    def send(self) -> None:
        app = self.app
        assert isinstance(app, Gmail)
        if "@" not in self.draft["to"]:
            return
        app.db.insert(MESSAGES_URI, {"folder": "sent", "from_address": ACCOUNT, "to_address": self.draft["to"].strip(),
                                     "subject": self.draft["subject"], "body": self.draft["body"], "read": 1,
                                     "date": int(self.system.now() * 1000)})
        self.finish()


class Gmail(App):
    PACKAGE = PACKAGE
    LABEL = "Gmail"
    LAUNCHER_ACTIVITY = INBOX
    ACTIVITIES = (INBOX, COMPOSE)
    VERSION_NAME = "2024.09.29.680233435.Release"
    VERSION_CODE = 64906094

    def create_providers(self) -> list[SqliteProvider]:
        return [GmailProvider()]

    @property
    def db(self) -> GmailProvider:
        provider = self.providers()[0]
        assert isinstance(provider, GmailProvider)
        return provider

    def folder(self, name: str) -> list[tuple[int, str, str, str, int]]:
        rows = self.db.db.execute("SELECT _id, from_address, subject, body, read FROM messages WHERE folder = ? "
                                  "ORDER BY date DESC, _id DESC", (name,)).fetchall()
        return [(int(i), str(f), str(s), str(b), int(r)) for i, f, s, b, r in rows]

    def open_mail(self, mail_id: int) -> None:
        self.db.db.execute("UPDATE messages SET read = 1 WHERE _id = ?", (mail_id,))
        self.system.start_activity(Intent(ACTION_VIEW, data=f"{MESSAGES_URI}/{mail_id}", package=PACKAGE))

    def resolve(self, intent: Intent) -> str | None:
        data = intent.data or ""
        if intent.action in (ACTION_SENDTO, ACTION_VIEW) and data.startswith("mailto:"):
            return COMPOSE
        if intent.action == ACTION_SEND and (intent.mime_type or "").startswith(("text/", "message/")):
            return COMPOSE
        if intent.action == ACTION_VIEW and data.startswith(f"{MESSAGES_URI}/"):
            return INBOX
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if activity == COMPOSE:
            return ComposeActivity(self, activity, intent)
        if intent.action == ACTION_VIEW:
            return MessageActivity(self, activity, intent)
        return InboxActivity(self, activity, intent)
