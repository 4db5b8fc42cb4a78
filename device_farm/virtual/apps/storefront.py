"""What the commerce apps (shopping, food delivery, travel, payments) share: an account that
must be signed in before anything else shows, and long lists that show the rows that fit and
scroll by rows under a vertical drag (swipe, uiautomator scroll), like the other apps' lists.

Each such app keeps an `account` table in its provider (`_id, email, name`): a row there is the
signed-in account, so a task signs in with one `content insert`; until then every activity shows
the app's sign-in screen (email, password, a "Sign in" button that signs in any non-empty pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, ClassVar

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.content import SqliteProvider
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui import widgets
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, scrolled, text_view

ACCOUNT_TABLE = "CREATE TABLE account (_id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL, name TEXT);"


class AccountApp(App):
    """An app whose data lives in one provider with an `account` table."""

    SYSTEM_APP = False
    # (title, email field id, password field id, submit button id, submit label)
    SIGN_IN: ClassVar[tuple[str, str, str, str, str]] = ("Sign in", "email", "password", "sign_in", "Sign in")

    @property
    def db(self) -> SqliteProvider:
        return self.providers()[0]

    def rid(self, name: str) -> str:
        return f"{self.package}:id/{name}"

    def signed_in(self) -> bool:
        return self.db.db.execute("SELECT COUNT(*) FROM account").fetchone()[0] > 0

    def sign_in(self, email: str) -> None:
        self.db.db.execute("INSERT INTO account (email, name) VALUES (?, ?)", (email, email.split("@")[0]))

    def rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        return [tuple(r) for r in self.db.db.execute(sql, args).fetchall()]

    def open(self, activity: str, **extras: object) -> None:
        """Push one of this app's activities (an explicit intent, as the app does itself)."""
        from device_farm.virtual.os.intents import ComponentName

        self.system.start_activity(Intent(component=ComponentName(self.package, activity), extras=dict(extras)))


@dataclass
class ListScroll:
    """Where an activity's one long list is scrolled to, and what it last laid out."""

    first: int = 0
    total: int = 0
    row_height: int = 1
    bounds: Bounds | None = None


class AccountActivity(Activity):
    """Shows the sign-in screen until the app has an account, then `content(screen)`."""

    def __init__(self, app: App, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.login = {"email": "", "password": ""}
        self.scroll = ListScroll()

    def on_scroll(self, dy: int) -> bool:
        scroll = self.scroll
        if scroll.bounds is None:
            self.system.window()  # lay the list out first, as a real view is before it gets input
        if scroll.bounds is None or not self.store.signed_in():
            return False
        before = scroll.first
        scroll.first = scrolled(scroll.first, dy, scroll.row_height, scroll.total, scroll.bounds)
        return before != scroll.first

    @property
    def store(self) -> AccountApp:
        assert isinstance(self.app, AccountApp)
        return self.app

    def build(self, screen: Bounds) -> list[ViewNode]:
        if not self.store.signed_in():
            return self._sign_in_views(screen)
        return self.content(screen)

    def content(self, screen: Bounds) -> list[ViewNode]:
        return []

    def _sign_in_views(self, screen: Bounds) -> list[ViewNode]:
        title, email_id, password_id, submit_id, submit = self.store.SIGN_IN
        rid, w, top = self.store.rid, screen.right, screen.top
        if self.focused is None:
            self.focused = rid(email_id)

        def setter(key: str) -> Callable[[str], None]:
            return lambda text: self.login.__setitem__(key, text)

        password = edit_text(self, Bounds(60, top + 560, w - 60, top + 720), rid(password_id), "Password",
                             "•" * len(self.login["password"]), lambda t: None)
        password.password, password.value = True, self.login["password"]
        password.on_set_text = setter("password")
        return [
            text_view(Bounds(60, top + 120, w - 60, top + 260), title, rid("sign_in_title")),
            edit_text(self, Bounds(60, top + 340, w - 60, top + 500), rid(email_id), "Email or mobile phone number",
                      self.login["email"], setter("email")),
            password,
            button(Bounds(60, top + 800, w - 60, top + 960), submit, rid(submit_id), on_click=self._submit),
        ]

    def _submit(self) -> None:
        if self.login["email"].strip() and self.login["password"]:
            self.store.sign_in(self.login["email"].strip())
            self.focused = None


def row_list(bounds: Bounds, row_height: int, count: int, make_row: Callable[[int, Bounds], ViewNode],
             resource_id: str, empty: str, empty_id: str, scroll: ListScroll | None = None) -> ViewNode:
    """``widgets.row_list`` over ``count`` rows, from the row ``scroll`` is at (kept within the
    list), or ``empty`` when there are none; ``make_row`` gets the row's index in the whole list."""
    first = 0
    if scroll is not None:
        fit = max(1, (bounds.bottom - bounds.top) // row_height)
        scroll.first = first = min(scroll.first, max(0, count - fit))
        scroll.total, scroll.row_height, scroll.bounds = count, row_height, bounds
    if count == 0:
        return text_view(bounds, empty, empty_id)
    return widgets.row_list(bounds, [partial(make_row, i) for i in range(count)], row_height, first, resource_id)


def money(amount: float, symbol: str = "$") -> str:
    return f"{symbol}{amount:,.2f}"
