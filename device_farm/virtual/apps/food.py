"""DoorDash (com.dd.doordash): the restaurants list with a search field, a store's menu
("Add" per dish, "View cart"), checkout ("Place Order" buys: sensitive) and the order status,
behind a sign-in screen until an account exists. The cart holds one store's dishes; adding a
dish from another store starts a new cart, as DoorDash does.

Intents: VIEW `https://www.doordash.com/store/<id>` and `doordash://store/<id>` (a store's menu).
Provider `com.dd.doordash.provider`: `account`, `stores` (`_id, name, cuisine, rating, eta_min,
delivery_fee`), `menu_items` (`_id, store_id, name, price`), `cart` (`_id, item_id, quantity`),
`orders` (`_id, store, items, total, status`; `items` is "2x Pad Thai, 1x Spring Rolls").
A fresh install lists 16 stores with their menus.
"""

from __future__ import annotations

import re

from device_farm.virtual.apps.storefront import ACCOUNT_TABLE, AccountActivity, AccountApp, money, row_list
from device_farm.virtual.os.app import Activity
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, text_view

PACKAGE = "com.dd.doordash"
MAIN = "com.doordash.consumer.ui.MainActivity"
STORE = "com.doordash.consumer.ui.store.StoreActivity"
CHECKOUT = "com.doordash.consumer.ui.checkout.CheckoutActivity"
STORE_LINK = re.compile(r"^(?:https://(?:www\.)?doordash\.com/store/|doordash://store/)(?:[a-z0-9-]+-)?(\d+)/?")
STORES = [
    ("Thai Basil", "Thai", 4.7, 25, 1.99, [("Pad Thai", 14.50), ("Green Curry", 15.25), ("Spring Rolls", 6.95), ("Tom Yum Soup", 8.50), ("Mango Sticky Rice", 7.25)]),
    ("Luigi's Pizzeria", "Pizza", 4.5, 30, 2.99, [("Margherita Pizza", 16.00), ("Pepperoni Pizza", 18.00), ("Garlic Knots", 5.50), ("Caesar Salad", 9.00)]),
    ("Sakura Sushi", "Japanese", 4.8, 35, 3.49, [("California Roll", 8.95), ("Spicy Tuna Roll", 10.50), ("Salmon Nigiri", 7.00), ("Miso Soup", 3.50)]),
    ("Chipotle Mexican Grill", "Mexican", 4.4, 20, 0.99, [("Burrito Bowl", 11.25), ("Chicken Burrito", 10.95), ("Chips & Guacamole", 5.45)]),
    ("Shake Shack", "Burgers", 4.5, 22, 2.49, [("ShackBurger", 8.59), ("Cheese Fries", 5.29), ("Chocolate Shake", 6.49)]),
    ("Sweetgreen", "Salads", 4.6, 18, 1.49, [("Harvest Bowl", 14.95), ("Kale Caesar", 12.45), ("Guacamole Greens", 13.95)]),
    ("Golden Dragon", "Chinese", 4.3, 40, 1.99, [("Kung Pao Chicken", 13.95), ("Fried Rice", 9.50), ("Pork Dumplings", 7.95)]),
    ("Curry House", "Indian", 4.6, 35, 2.99, [("Chicken Tikka Masala", 16.95), ("Garlic Naan", 3.95), ("Samosa", 5.95)]),
    ("Pho Saigon", "Vietnamese", 4.5, 30, 1.99, [("Beef Pho", 13.50), ("Banh Mi", 9.25), ("Fresh Rolls", 6.50)]),
    ("Olive & Feta", "Greek", 4.4, 28, 2.49, [("Chicken Gyro", 11.95), ("Greek Salad", 10.50), ("Falafel Plate", 12.25)]),
    ("Burger King", "Burgers", 4.0, 15, 0.99, [("Whopper", 7.49), ("Chicken Fries", 4.99), ("Onion Rings", 3.79)]),
    ("Panera Bread", "Bakery", 4.3, 25, 1.99, [("Broccoli Cheddar Soup", 7.99), ("Turkey Sandwich", 10.49), ("Bagel", 2.49)]),
    ("Seoul Kitchen", "Korean", 4.7, 33, 2.99, [("Bibimbap", 15.50), ("Korean Fried Chicken", 17.95), ("Kimchi Pancake", 11.00)]),
    ("La Taqueria", "Mexican", 4.8, 26, 1.49, [("Carnitas Taco", 4.25), ("Super Burrito", 12.95), ("Horchata", 3.50)]),
    ("Blue Bottle Coffee", "Coffee", 4.6, 12, 0.99, [("Latte", 5.75), ("Cold Brew", 5.25), ("Croissant", 4.50)]),
    ("Poke Bar", "Hawaiian", 4.5, 21, 1.99, [("Salmon Poke Bowl", 15.95), ("Tuna Poke Bowl", 16.95), ("Seaweed Salad", 4.95)]),
]
ROW = 260


class FoodProvider(SqliteProvider):
    AUTHORITY = "com.dd.doordash.provider"
    SCHEMA = ACCOUNT_TABLE + """
        CREATE TABLE stores (_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, cuisine TEXT NOT NULL DEFAULT '',
            rating REAL NOT NULL DEFAULT 4.5, eta_min INTEGER NOT NULL DEFAULT 30, delivery_fee REAL NOT NULL DEFAULT 1.99);
        CREATE TABLE menu_items (_id INTEGER PRIMARY KEY AUTOINCREMENT, store_id INTEGER NOT NULL, name TEXT NOT NULL,
            price REAL NOT NULL);
        CREATE TABLE cart (_id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER NOT NULL, quantity INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE orders (_id INTEGER PRIMARY KEY AUTOINCREMENT, store TEXT NOT NULL, items TEXT NOT NULL,
            total REAL NOT NULL, status TEXT NOT NULL DEFAULT 'Preparing');
    """
    PATHS = {(name,): Table(name) for name in ("account", "stores", "menu_items", "cart", "orders")}

    def __init__(self) -> None:
        super().__init__()
        for name, cuisine, rating, eta, fee, menu in STORES:
            store_id = self._insert_row("stores", {"name": name, "cuisine": cuisine, "rating": rating,
                                                   "eta_min": eta, "delivery_fee": fee})
            self.db.executemany("INSERT INTO menu_items (store_id, name, price) VALUES (?, ?, ?)",
                                [(store_id, dish, price) for dish, price in menu])


class MainActivity(AccountActivity):
    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.query = ""

    def content(self, screen: Bounds) -> list[ViewNode]:
        dd, w, top = self.food, screen.right, screen.top
        stores = [s for s in dd.rows("SELECT _id, name, cuisine, rating, eta_min, delivery_fee FROM stores ORDER BY _id")
                  if self.query.lower() in f"{s[1]} {s[2]}".lower()]

        def row(i: int, b: Bounds) -> ViewNode:
            sid, name, cuisine, rating, eta, fee = stores[i]
            return group(b, [
                text_view(Bounds(40, b.top + 20, w - 40, b.top + 110), str(name), dd.rid("store_name")),
                text_view(Bounds(40, b.top + 120, w - 40, b.top + 190),
                          f"{cuisine} • {rating}★ • {eta} min • {money(float(fee))} delivery fee", dd.rid("store_info")),  # type: ignore[arg-type]
            ], dd.rid("store_item"), on_click=lambda: dd.open(STORE, store_id=sid))
        return [
            edit_text(self, Bounds(40, top + 20, w - 40, top + 160), dd.rid("search_bar"), "Search DoorDash",
                      self.query, lambda t: setattr(self, "query", t)),
            text_view(Bounds(40, top + 180, w - 40, top + 260), "All Stores", dd.rid("section_title")),
            row_list(Bounds(0, top + 280, w, screen.bottom - 180), ROW, len(stores), row, dd.rid("recycler_view"),
                     "No results", dd.rid("empty_state"), self.scroll),
            *dd.cart_button(screen),
        ]

    @property
    def food(self) -> "DoorDash":
        assert isinstance(self.app, DoorDash)
        return self.app


class StoreActivity(MainActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        dd, w, top = self.food, screen.right, screen.top
        store_id = self.intent.extra_int("store_id", 0) or 0
        store = dd.rows("SELECT name, eta_min FROM stores WHERE _id = ?", (store_id,))
        if not store:
            return [text_view(Bounds(40, top + 200, w - 40, top + 320), "Store unavailable", dd.rid("empty_state"))]
        menu = dd.rows("SELECT _id, name, price FROM menu_items WHERE store_id = ? ORDER BY _id", (store_id,))

        def row(i: int, b: Bounds) -> ViewNode:
            item_id, dish, price = menu[i]
            return group(b, [
                text_view(Bounds(40, b.top + 30, w - 300, b.top + 120), str(dish), dd.rid("item_name")),
                text_view(Bounds(40, b.top + 130, w - 300, b.top + 200), money(float(price)), dd.rid("item_price")),  # type: ignore[arg-type]
                button(Bounds(w - 260, b.top + 60, w - 40, b.top + 180), "Add", dd.rid("add_button"),
                       desc=f"Add {dish}", on_click=lambda: dd.add(int(item_id))),  # type: ignore[call-overload]
            ], dd.rid("menu_item"))
        return [
            text_view(Bounds(40, top + 20, w - 40, top + 150), str(store[0][0]), dd.rid("store_header_name")),
            text_view(Bounds(40, top + 160, w - 40, top + 230), f"{store[0][1]} min delivery", dd.rid("store_header_eta")),
            row_list(Bounds(0, top + 260, w, screen.bottom - 180), ROW, len(menu), row, dd.rid("menu_list"),
                     "No items", dd.rid("empty_state"), self.scroll),
            *dd.cart_button(screen),
        ]


class CheckoutActivity(MainActivity):
    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.placed = False

    def content(self, screen: Bounds) -> list[ViewNode]:
        dd, w, top = self.food, screen.right, screen.top
        if self.placed:
            return [text_view(Bounds(40, top + 200, w - 40, top + 320), "Order placed! Preparing your order",
                              dd.rid("order_status_title"))]
        lines, store, fee = dd.cart()
        views = [text_view(Bounds(40, top + 20, w - 40, top + 140), f"Checkout — {store}", dd.rid("checkout_title"))]
        for i, (_, dish, price, qty) in enumerate(lines[:8]):
            views.append(text_view(Bounds(40, top + 160 + i * 110, w - 40, top + 260 + i * 110),
                                   f"{qty}x {dish} {money(price * qty)}", dd.rid("cart_item")))
        total = sum(p * q for _, _, p, q in lines) + fee
        views += [text_view(Bounds(40, screen.bottom - 420, w - 40, screen.bottom - 320), f"Total {money(total)}",
                            dd.rid("order_total")),
                  button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Place Order",
                         dd.rid("place_order_button"), on_click=self._place)]
        return views

    def _place(self) -> None:
        if self.food.place_order():
            self.placed = True


class DoorDash(AccountApp):
    PACKAGE = PACKAGE
    LABEL = "DoorDash"
    LAUNCHER_ACTIVITY = MAIN
    ACTIVITIES = (MAIN, STORE, CHECKOUT)
    VERSION_NAME = "15.170.5"
    VERSION_CODE = 1517005
    SIGN_IN = ("Sign In", "email", "password", "sign_in_button", "Continue to Sign In")
    SCREENS = {MAIN: MainActivity, STORE: StoreActivity, CHECKOUT: CheckoutActivity}

    def create_providers(self) -> list[SqliteProvider]:
        return [FoodProvider()]

    def cart(self) -> tuple[list[tuple[int, str, float, int]], str, float]:
        lines = self.rows("SELECT c._id, m.name, m.price, c.quantity FROM cart c JOIN menu_items m ON m._id = c.item_id ORDER BY c._id")
        store = self.rows("SELECT s.name, s.delivery_fee FROM cart c JOIN menu_items m ON m._id = c.item_id "
                          "JOIN stores s ON s._id = m.store_id LIMIT 1")
        return lines, (str(store[0][0]) if store else ""), (float(store[0][1]) if store else 0.0)  # type: ignore[return-value,arg-type]

    def cart_button(self, screen: Bounds) -> list[ViewNode]:
        count = int(self.rows("SELECT COALESCE(SUM(quantity), 0) FROM cart")[0][0])  # type: ignore[arg-type]
        if not count:
            return []
        return [button(Bounds(40, screen.bottom - 160, screen.right - 40, screen.bottom - 20), f"View cart ({count})",
                       self.rid("view_cart_button"), on_click=lambda: self.open(CHECKOUT))]

    def add(self, item_id: int) -> None:
        store = self.rows("SELECT store_id FROM menu_items WHERE _id = ?", (item_id,))[0][0]
        others = self.rows("SELECT 1 FROM cart c JOIN menu_items m ON m._id = c.item_id WHERE m.store_id != ?", (store,))
        if others:
            self.db.db.execute("DELETE FROM cart")
        if self.rows("SELECT 1 FROM cart WHERE item_id = ?", (item_id,)):
            self.db.db.execute("UPDATE cart SET quantity = quantity + 1 WHERE item_id = ?", (item_id,))
        else:
            self.db.db.execute("INSERT INTO cart (item_id, quantity) VALUES (?, 1)", (item_id,))

    def place_order(self) -> bool:
        lines, store, fee = self.cart()
        if not lines:
            return False
        items = ", ".join(f"{q}x {dish}" for _, dish, _, q in lines)
        total = round(sum(p * q for _, _, p, q in lines) + fee, 2)
        self.db.db.execute("INSERT INTO orders (store, items, total) VALUES (?, ?, ?)", (store, items, total))
        self.db.db.execute("DELETE FROM cart")
        return True

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_VIEW and STORE_LINK.match(intent.data or ""):
            return STORE
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        link = STORE_LINK.match(intent.data or "")
        if link:
            intent.extras["store_id"] = int(link.group(1))
        return self.SCREENS.get(activity, MainActivity)(self, activity, intent)
