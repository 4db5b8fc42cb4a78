"""PayPal (com.paypal.android.p2pmobile): the home screen with the PayPal balance, a "Send"
button and recent activity; the send-money screen (recipient, amount, note, "Send Now" pays:
sensitive) and its confirmation, behind a log-in screen until an account exists.

Intents: VIEW `https://www.paypal.me/<name>/<amount>` and `https://paypal.me/<name>/<amount>`
(the send screen, prefilled). Provider `com.paypal.android.p2pmobile.provider`: `account`,
`balance` (`_id, amount, currency`; the first row is the balance), `transactions`
(`_id, counterparty, amount` (negative = sent), `note, created` (YYYY-MM-DD)). A fresh install
has a $250.00 balance and 12 transactions. Sending more than the balance is refused.
"""

from __future__ import annotations

import re

from device_farm.virtual.apps.storefront import ACCOUNT_TABLE, AccountActivity, AccountApp, money, row_list
from device_farm.virtual.os.app import Activity
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, text_view

PACKAGE = "com.paypal.android.p2pmobile"
HOME = "com.paypal.android.p2pmobile.startup.activities.StartupActivity"
SEND = "com.paypal.android.p2pmobile.p2p.sendmoney.activities.SendMoneyActivity"
PAYPAL_ME = re.compile(r"^https://(?:www\.)?paypal\.me/([^/?#]+)(?:/(\d+(?:\.\d{1,2})?))?/?$")
HISTORY = [
    ("Spotify", -10.99, "Premium", "2026-11-01"), ("Maria Garcia", 40.00, "Concert tickets", "2026-11-03"),
    ("eBay", -23.50, "Phone case", "2026-11-05"), ("John Smith", -15.00, "Lunch", "2026-11-08"),
    ("Netflix", -15.49, "Standard plan", "2026-11-10"), ("Alex Chen", 25.00, "Pizza night", "2026-11-12"),
    ("Uber", -18.20, "Ride", "2026-11-14"), ("Etsy", -32.00, "Mug", "2026-11-17"),
    ("Sam Taylor", -60.00, "Rent share", "2026-11-20"), ("Maria Garcia", -12.00, "Coffee", "2026-11-22"),
    ("Steam", -19.99, "Game", "2026-11-24"), ("John Smith", 30.00, "Dinner", "2026-11-26"),
]
ROW = 200


class PaymentsProvider(SqliteProvider):
    AUTHORITY = "com.paypal.android.p2pmobile.provider"
    SCHEMA = ACCOUNT_TABLE + """
        CREATE TABLE balance (_id INTEGER PRIMARY KEY AUTOINCREMENT, amount REAL NOT NULL, currency TEXT NOT NULL DEFAULT 'USD');
        CREATE TABLE transactions (_id INTEGER PRIMARY KEY AUTOINCREMENT, counterparty TEXT NOT NULL, amount REAL NOT NULL,
            note TEXT NOT NULL DEFAULT '', created TEXT NOT NULL DEFAULT '2026-11-29');
    """
    PATHS = {(name,): Table(name) for name in ("account", "balance", "transactions")}

    def __init__(self) -> None:
        super().__init__()
        self.db.execute("INSERT INTO balance (amount) VALUES (250.0)")
        self.db.executemany("INSERT INTO transactions (counterparty, amount, note, created) VALUES (?, ?, ?, ?)", HISTORY)


def signed(amount: float) -> str:
    return ("+" if amount > 0 else "-") + money(abs(amount))


class HomeActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        pp, w, top = self.pay, screen.right, screen.top
        history = pp.rows("SELECT counterparty, amount, note, created FROM transactions ORDER BY created DESC, _id DESC")

        def row(i: int, b: Bounds) -> ViewNode:
            who, amount, note, created = history[i]
            return group(b, [
                text_view(Bounds(40, b.top + 20, w - 340, b.top + 100), str(who), pp.rid("activity_item_title")),
                text_view(Bounds(40, b.top + 110, w - 340, b.top + 180), f"{created} · {note}", pp.rid("activity_item_subtitle")),
                text_view(Bounds(w - 320, b.top + 40, w - 40, b.top + 140), signed(float(amount)), pp.rid("activity_item_amount")),  # type: ignore[arg-type]
            ], pp.rid("activity_item"))
        return [
            text_view(Bounds(40, top + 20, w - 40, top + 100), "PayPal balance", pp.rid("balance_label")),
            text_view(Bounds(40, top + 100, w - 40, top + 240), money(pp.balance()), pp.rid("balance_amount")),
            button(Bounds(40, top + 270, w // 2 - 20, top + 400), "Send", pp.rid("send_money_button"),
                   on_click=lambda: pp.open(SEND)),
            button(Bounds(w // 2 + 20, top + 270, w - 40, top + 400), "Request", pp.rid("request_money_button")),
            text_view(Bounds(40, top + 430, w - 40, top + 510), "Recent activity", pp.rid("activity_header")),
            row_list(Bounds(0, top + 520, w, screen.bottom), ROW, len(history), row, pp.rid("activity_list"),
                     "No recent activity", pp.rid("activity_empty"), self.scroll),
        ]

    @property
    def pay(self) -> "PayPal":
        assert isinstance(self.app, PayPal)
        return self.app


class SendActivity(HomeActivity):
    FIELDS = (("to", "search_field", "Name, @username, email or mobile"), ("amount", "amount_edit_text", "$0.00"),
              ("note", "add_note", "What's this for?"))

    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.form = {key: intent.extra_str(key) or "" for key, _, _ in self.FIELDS}
        self.sent: str | None = None
        self.error = ""

    def content(self, screen: Bounds) -> list[ViewNode]:
        pp, w, top = self.pay, screen.right, screen.top
        if self.sent is not None:
            return [text_view(Bounds(40, top + 200, w - 40, top + 340), self.sent, pp.rid("success_title")),
                    button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Done", pp.rid("done_button"),
                           on_click=self.finish)]
        views = [text_view(Bounds(40, top + 20, w - 40, top + 140), "Send money", pp.rid("title"))]
        for i, (key, rid, hint) in enumerate(self.FIELDS):
            views.append(edit_text(self, Bounds(40, top + 180 + i * 180, w - 40, top + 330 + i * 180), pp.rid(rid), hint,
                                   self.form[key], lambda t, key=key: self.form.__setitem__(key, t)))
        if self.error:
            views.append(text_view(Bounds(40, top + 740, w - 40, top + 820), self.error, pp.rid("error_text")))
        views.append(button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Send Now", pp.rid("send_button"),
                            on_click=self._send))
        return views

    def _send(self) -> None:
        to, note = self.form["to"].strip(), self.form["note"].strip()
        try:
            amount = round(float(self.form["amount"].replace("$", "").replace(",", "")), 2)
        except ValueError:
            amount = 0.0
        if not to or amount <= 0:
            self.error = "Enter a recipient and an amount"
        elif amount > self.pay.balance():
            self.error = "You don't have enough money in your PayPal balance"
        else:
            self.pay.send(to, amount, note)
            self.sent, self.error = f"You sent {money(amount)} USD to {to}", ""


class PayPal(AccountApp):
    PACKAGE = PACKAGE
    LABEL = "PayPal"
    LAUNCHER_ACTIVITY = HOME
    ACTIVITIES = (HOME, SEND)
    VERSION_NAME = "8.62.0"
    VERSION_CODE = 862000
    SIGN_IN = ("Log in to PayPal", "email", "password", "login_button", "Log In")

    def create_providers(self) -> list[SqliteProvider]:
        return [PaymentsProvider()]

    def balance(self) -> float:
        rows = self.rows("SELECT amount FROM balance ORDER BY _id LIMIT 1")
        return float(rows[0][0]) if rows else 0.0  # type: ignore[arg-type]

    def send(self, to: str, amount: float, note: str) -> None:
        self.db.db.execute("UPDATE balance SET amount = round(amount - ?, 2) WHERE _id = (SELECT MIN(_id) FROM balance)", (amount,))
        today = self.rows("SELECT date(?, 'unixepoch')", (int(self.system.now()),))[0][0]
        self.db.db.execute("INSERT INTO transactions (counterparty, amount, note, created) VALUES (?, ?, ?, ?)",
                           (to, -amount, note, today))

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_VIEW and PAYPAL_ME.match(intent.data or ""):
            return SEND
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        link = PAYPAL_ME.match(intent.data or "")
        if link:
            intent.extras.setdefault("to", link.group(1))
            if link.group(2):
                intent.extras.setdefault("amount", link.group(2))
        return (SendActivity if activity == SEND else HomeActivity)(self, activity, intent)
