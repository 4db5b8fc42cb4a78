"""Booking.com (com.booking): a search form (destination, check-in, check-out), the results list
with review scores and the price for the stay, a property page ("Reserve"), the booking step
("Complete booking" books and pays: sensitive) and its confirmation, behind a sign-in screen
until an account exists.

Intents: VIEW `https://www.booking.com/searchresults.html?ss=CITY&checkin=YYYY-MM-DD&checkout=YYYY-MM-DD`
and `booking://searchresults?...` (same query). Provider `com.booking.provider`: `account`,
`hotels` (`_id, city, name, price` per night in USD, `score` out of 10), `bookings`
(`_id, hotel, city, checkin, checkout, nights, total, status`). A fresh install has 8 properties
in each of Lisbon, Paris, Tokyo and New York.
"""

from __future__ import annotations

from datetime import date
from urllib.parse import parse_qs, urlparse

from device_farm.virtual.apps.storefront import ACCOUNT_TABLE, AccountActivity, AccountApp, money, row_list
from device_farm.virtual.os.app import Activity
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, text_view

PACKAGE = "com.booking"
HOME = "com.booking.startup.HomeActivity"
RESULTS = "com.booking.searchresult.SearchResultsActivity"
HOTEL = "com.booking.hotelpage.HotelActivity"
BOOK = "com.booking.bookingprocess.BookingProcessActivity"
HOTELS = {
    "Lisbon": [("Memmo Alfama", 310, 9.3), ("Hotel Avenida Palace", 245, 9.0), ("Lisboa Pessoa Hotel", 198, 9.1),
               ("Hotel Britania", 265, 9.2), ("My Story Hotel Rossio", 132, 8.4), ("Lost Inn Lisbon Hostel", 48, 8.9),
               ("Olissippo Lapa Palace", 520, 9.4), ("Ibis Lisboa Saldanha", 89, 7.8)],
    "Paris": [("Hotel Le Marais", 280, 8.6), ("Le Pavillon de la Reine", 610, 9.2), ("Hotel Eiffel Turenne", 210, 8.8),
              ("Generator Paris", 65, 8.1), ("Hotel des Grands Boulevards", 350, 9.0), ("Citadines Les Halles", 190, 8.2),
              ("Hotel Malte Opera", 240, 8.5), ("Ibis Paris Gare de Lyon", 120, 7.6)],
    "Tokyo": [("Park Hotel Tokyo", 260, 9.0), ("Hotel Gracery Shinjuku", 180, 8.7), ("Mitsui Garden Hotel Ginza", 220, 8.9),
              ("UNPLAN Shinjuku", 55, 8.8), ("The Gate Hotel Kaminarimon", 240, 9.2), ("APA Hotel Shinjuku", 95, 7.9),
              ("Hotel Niwa Tokyo", 200, 9.1), ("Sotetsu Fresa Inn Ginza", 120, 8.3)],
    "New York": [("The Greenwich Hotel", 890, 9.4), ("Arlo SoHo", 310, 8.4), ("Pod 51", 150, 7.8),
                 ("The Standard High Line", 420, 8.6), ("Moxy NYC Times Square", 260, 8.1), ("HI NYC Hostel", 70, 8.0),
                 ("The Ludlow Hotel", 480, 9.0), ("citizenM New York Bowery", 280, 8.9)],
}
ROW = 260


def nights(checkin: str, checkout: str) -> int:
    try:
        return (date.fromisoformat(checkout) - date.fromisoformat(checkin)).days
    except ValueError:
        return 0


class TravelProvider(SqliteProvider):
    AUTHORITY = "com.booking.provider"
    SCHEMA = ACCOUNT_TABLE + """
        CREATE TABLE hotels (_id INTEGER PRIMARY KEY AUTOINCREMENT, city TEXT NOT NULL, name TEXT NOT NULL,
            price REAL NOT NULL, score REAL NOT NULL DEFAULT 8.0);
        CREATE TABLE bookings (_id INTEGER PRIMARY KEY AUTOINCREMENT, hotel TEXT NOT NULL, city TEXT NOT NULL,
            checkin TEXT NOT NULL, checkout TEXT NOT NULL, nights INTEGER NOT NULL, total REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'Confirmed');
    """
    PATHS = {(name,): Table(name) for name in ("account", "hotels", "bookings")}

    def __init__(self) -> None:
        super().__init__()
        self.db.executemany("INSERT INTO hotels (city, name, price, score) VALUES (?, ?, ?, ?)",
                            [(city, *h) for city, hotels in HOTELS.items() for h in hotels])


class HomeActivity(AccountActivity):
    FIELDS = (("city", "search_destination", "Enter your destination"), ("checkin", "search_checkin", "Check-in (YYYY-MM-DD)"),
              ("checkout", "search_checkout", "Check-out (YYYY-MM-DD)"))

    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.form = {"city": "", "checkin": "", "checkout": ""}

    def content(self, screen: Bounds) -> list[ViewNode]:
        app, w, top = self.store, screen.right, screen.top
        views = [text_view(Bounds(40, top + 20, w - 40, top + 140), "Find your next stay", app.rid("search_title"))]
        for i, (key, rid, hint) in enumerate(self.FIELDS):
            views.append(edit_text(self, Bounds(40, top + 180 + i * 180, w - 40, top + 330 + i * 180), app.rid(rid), hint,
                                   self.form[key], lambda t, key=key: self.form.__setitem__(key, t)))
        views.append(button(Bounds(40, top + 740, w - 40, top + 880), "Search", app.rid("search_button"),
                            on_click=lambda: app.open(RESULTS, **self.form) if nights(self.form["checkin"], self.form["checkout"]) > 0 else None))
        return views


class ResultsActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        app, w, top, x = self.store, screen.right, screen.top, self.intent.extras
        city, checkin, checkout = (str(x.get(k, "")) for k in ("city", "checkin", "checkout"))
        n = nights(checkin, checkout)
        hotels = app.rows("SELECT _id, name, price, score FROM hotels WHERE city = ? COLLATE NOCASE ORDER BY _id", (city.strip(),))

        def row(i: int, b: Bounds) -> ViewNode:
            hotel_id, name, price, score = hotels[i]
            return group(b, [
                text_view(Bounds(40, b.top + 20, w - 40, b.top + 110), str(name), app.rid("sr_hotel_name")),
                text_view(Bounds(40, b.top + 120, 400, b.top + 190), f"{score}", app.rid("review_score_badge")),
                text_view(Bounds(420, b.top + 120, w - 40, b.top + 190), f"{money(float(price) * n)} for {n} nights",  # type: ignore[arg-type]
                          app.rid("price_view_price")),
            ], app.rid("sr_property_card"), on_click=lambda: app.open(HOTEL, hotel_id=hotel_id, checkin=checkin, checkout=checkout))
        return [
            text_view(Bounds(40, top + 20, w - 40, top + 140), f"{city} · {checkin} – {checkout}", app.rid("search_box_summary")),
            text_view(Bounds(40, top + 150, w - 40, top + 230), f"{len(hotels)} properties", app.rid("sr_count")),
            row_list(Bounds(0, top + 240, w, screen.bottom), ROW, len(hotels) if n > 0 else 0, row, app.rid("results_list"),
                     "No properties found. Check your destination and dates", app.rid("sr_empty"), self.scroll),
        ]


class HotelActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        app, w, top, x = self.store, screen.right, screen.top, self.intent.extras
        found = app.rows("SELECT name, price, score FROM hotels WHERE _id = ?", (x.get("hotel_id"),))
        if not found:
            return [text_view(Bounds(40, top + 200, w - 40, top + 320), "This property is unavailable", app.rid("hp_unavailable"))]
        name, price, score = found[0]
        n = nights(str(x.get("checkin")), str(x.get("checkout")))
        return [
            text_view(Bounds(40, top + 40, w - 40, top + 180), str(name), app.rid("hotel_name")),
            text_view(Bounds(40, top + 200, w - 40, top + 280), f"Review score {score}", app.rid("review_score")),
            text_view(Bounds(40, top + 300, w - 40, top + 380), f"{money(float(price))} per night", app.rid("price_per_night")),  # type: ignore[arg-type]
            text_view(Bounds(40, top + 400, w - 40, top + 480), f"{money(float(price) * n)} for {n} nights", app.rid("price_total")),  # type: ignore[arg-type]
            button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Reserve", app.rid("select_room_cta"),
                   on_click=lambda: app.open(BOOK, **x)),
        ]


class BookActivity(AccountActivity):
    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.booked = False

    def content(self, screen: Bounds) -> list[ViewNode]:
        app, w, top, x = self.store, screen.right, screen.top, self.intent.extras
        if self.booked:
            return [text_view(Bounds(40, top + 200, w - 40, top + 340), "You're booked! Confirmation sent", app.rid("confirmation_title"))]
        found = app.rows("SELECT name, city, price FROM hotels WHERE _id = ?", (x.get("hotel_id"),))
        if not found:
            return []
        name, city, price = found[0]
        checkin, checkout = str(x.get("checkin")), str(x.get("checkout"))
        total = round(float(price) * nights(checkin, checkout), 2)  # type: ignore[arg-type]
        guest = app.rows("SELECT email FROM account ORDER BY _id LIMIT 1")[0][0]
        return [
            text_view(Bounds(40, top + 20, w - 40, top + 140), f"{name}, {city}", app.rid("bp_hotel_name")),
            text_view(Bounds(40, top + 160, w - 40, top + 240), f"Check-in {checkin} · Check-out {checkout}", app.rid("bp_dates")),
            text_view(Bounds(40, top + 260, w - 40, top + 340), f"Guest: {guest}", app.rid("bp_guest")),
            text_view(Bounds(40, screen.bottom - 420, w - 40, screen.bottom - 320), f"Total {money(total)}", app.rid("bp_price")),
            button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Complete booking", app.rid("action_button"),
                   on_click=lambda: self._book(str(name), str(city), checkin, checkout, total)),
        ]

    def _book(self, hotel: str, city: str, checkin: str, checkout: str, total: float) -> None:
        self.store.db.db.execute("INSERT INTO bookings (hotel, city, checkin, checkout, nights, total) VALUES (?, ?, ?, ?, ?, ?)",
                                 (hotel, city, checkin, checkout, nights(checkin, checkout), total))
        self.booked = True


class Booking(AccountApp):
    PACKAGE = PACKAGE
    LABEL = "Booking.com"
    LAUNCHER_ACTIVITY = HOME
    ACTIVITIES = (HOME, RESULTS, HOTEL, BOOK)
    VERSION_NAME = "45.6"
    VERSION_CODE = 19845
    SIGN_IN = ("Sign in or create an account", "email_input", "password_input", "sign_in_button", "Continue with email")
    SCREENS = {HOME: HomeActivity, RESULTS: ResultsActivity, HOTEL: HotelActivity, BOOK: BookActivity}

    def create_providers(self) -> list[SqliteProvider]:
        return [TravelProvider()]

    @staticmethod
    def _search_link(data: str | None) -> dict[str, str] | None:
        url = urlparse(data or "")
        web = url.scheme == "https" and url.netloc.endswith("booking.com") and url.path.startswith("/searchresults")
        app = url.scheme == "booking" and url.netloc == "searchresults"
        if not (web or app):
            return None
        q = parse_qs(url.query)
        return {"city": q.get("ss", [""])[0], "checkin": q.get("checkin", [""])[0], "checkout": q.get("checkout", [""])[0]}

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_VIEW and self._search_link(intent.data) is not None:
            return RESULTS
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        link = self._search_link(intent.data)
        if link is not None:
            intent.extras.update(link)
        return self.SCREENS.get(activity, HomeActivity)(self, activity, intent)
