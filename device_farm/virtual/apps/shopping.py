"""Amazon Shopping (com.amazon.mShop.android.shopping): home with a search bar and deals,
search results, a product page (Add to Cart, Buy Now), the cart and checkout ("Place your
order" buys: sensitive), behind a sign-in screen until an account exists.

Intents: VIEW `https://www.amazon.com/s?k=QUERY` (search results), VIEW
`https://www.amazon.com/dp/ASIN` (product page), `android.intent.action.SEARCH` with a `query`
extra. Provider `com.amazon.mShop.android.shopping.provider`: `account`, `products`
(`_id, asin, title, price, rating`), `cart` (`_id, asin, quantity`), `orders`
(`_id, asin, title, quantity, total, status`). A fresh install has a catalogue of 24 products.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote_plus, urlparse

from device_farm.virtual.os.app import Activity
from device_farm.virtual.apps.storefront import (
    ACCOUNT_TABLE, AccountActivity, AccountApp, ListScroll, money, row_list,
)
from device_farm.virtual.os.content import SqliteProvider, Table
from device_farm.virtual.os.intents import ACTION_VIEW, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, edit_text, group, text_view

PACKAGE = "com.amazon.mShop.android.shopping"
STARTUP = "com.amazon.mShop.splashscreen.StartupActivity"
SEARCH = "com.amazon.mShop.search.SearchActivity"
DETAILS = "com.amazon.mShop.details.ProductDetailsActivity"
CART = "com.amazon.mShop.cart.web.WebCartActivity"
CHECKOUT = "com.amazon.mShop.checkout.CheckoutActivity"
ACTION_SEARCH = "android.intent.action.SEARCH"
CATALOGUE = [
    ("B07FZ8S74R", "Echo Dot (3rd Gen) Smart speaker with Alexa", 39.99, 4.7),
    ("B08C1W5N87", "Fire TV Stick with Alexa Voice Remote", 29.99, 4.7),
    ("B0BSHF7WHW", "Apple AirPods Pro (2nd Generation)", 189.99, 4.7),
    ("B07PXGQC1Q", "Apple AirPods (2nd Generation) Wireless Earbuds", 99.00, 4.8),
    ("B09B8V1LZ3", "Anker USB C Charger 20W", 15.99, 4.7),
    ("B0B2RD6QHL", "Anker Portable Charger 10000mAh Power Bank", 21.99, 4.5),
    ("B07WHMQNPC", "Logitech MX Master 3S Wireless Mouse", 99.99, 4.6),
    ("B07W6JN8V8", "Logitech K380 Multi-Device Bluetooth Keyboard", 29.99, 4.6),
    ("B00FLYWNYQ", "Instant Pot Duo 7-in-1 Electric Pressure Cooker", 89.99, 4.7),
    ("B07GJBBGHG", "Hydro Flask Wide Mouth Water Bottle 32 oz", 44.95, 4.8),
    ("B01N1UX8RW", "Stanley Quencher H2.0 Tumbler 40 oz", 45.00, 4.7),
    ("B00NTCH52W", "AmazonBasics AA Rechargeable Batteries (8-Pack)", 19.49, 4.4),
    ("B0012NGNU6", "Duracell AA Batteries (24-Pack)", 17.99, 4.8),
    ("B08KTZ8249", "Kindle Paperwhite (16 GB)", 149.99, 4.6),
    ("B09SWW583J", "Kindle Scribe (16 GB)", 339.99, 4.3),
    ("B07XJ8C8F5", "Ring Video Doorbell", 99.99, 4.5),
    ("B0CHWRXH8B", "Apple iPhone 15 Silicone Case with MagSafe", 49.00, 4.6),
    ("B0C33XXS56", "USB C to USB C Cable 6ft (2-Pack)", 9.99, 4.6),
    ("B07ZPKBL9V", "Sony WH-1000XM4 Wireless Noise Canceling Headphones", 248.00, 4.7),
    ("B0863TXGM3", "Sony WF-1000XM4 Noise Canceling Earbuds", 198.00, 4.3),
    ("B0756CYWWD", "Bose QuietComfort 45 Headphones", 229.00, 4.6),
    ("B08N5WRWNW", "Apple MacBook Air M1 13-inch", 749.99, 4.8),
    ("B01DFKC2SO", "Cuisinart Coffee Maker 12-Cup", 79.95, 4.4),
    ("B000E7L2R4", "Yoga Mat 1/4 inch Extra Thick", 24.99, 4.6),
]
ROW = 240


class ShopProvider(SqliteProvider):
    AUTHORITY = "com.amazon.mShop.android.shopping.provider"
    SCHEMA = ACCOUNT_TABLE + """
        CREATE TABLE products (_id INTEGER PRIMARY KEY AUTOINCREMENT, asin TEXT UNIQUE NOT NULL,
            title TEXT NOT NULL, price REAL NOT NULL, rating REAL NOT NULL DEFAULT 4.5);
        CREATE TABLE cart (_id INTEGER PRIMARY KEY AUTOINCREMENT, asin TEXT NOT NULL,
            quantity INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE orders (_id INTEGER PRIMARY KEY AUTOINCREMENT, asin TEXT NOT NULL, title TEXT NOT NULL,
            quantity INTEGER NOT NULL, total REAL NOT NULL, status TEXT NOT NULL DEFAULT 'Ordered');
    """
    PATHS = {("account",): Table("account"), ("products",): Table("products"), ("cart",): Table("cart"),
             ("orders",): Table("orders")}

    def __init__(self) -> None:
        super().__init__()
        self.db.executemany("INSERT INTO products (asin, title, price, rating) VALUES (?, ?, ?, ?)", CATALOGUE)


class HomeActivity(AccountActivity):
    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.query = ""

    def content(self, screen: Bounds) -> list[ViewNode]:
        shop, w, top = self.store, screen.right, screen.top
        assert isinstance(shop, Shopping)
        products = shop.search("")
        return [
            edit_text(self, Bounds(40, top + 20, w - 260, top + 160), shop.rid("chrome_search_hint_view"),
                      "Search Amazon", self.query, lambda t: setattr(self, "query", t)),
            button(Bounds(w - 240, top + 20, w - 140, top + 160), "", shop.rid("chrome_action_bar_search_icon"),
                   desc="Search", image=True, on_click=lambda: shop.open(SEARCH, query=self.query)),
            button(Bounds(w - 130, top + 20, w - 20, top + 160), str(shop.cart_count()), shop.rid("chrome_action_bar_cart_count"),
                   desc="Cart", on_click=lambda: shop.open(CART)),
            text_view(Bounds(40, top + 180, w - 40, top + 260), "Today's Deals", shop.rid("deals_title")),
            product_list(shop, Bounds(0, top + 280, w, screen.bottom), products, self.scroll),
        ]


def product_list(shop: "Shopping", bounds: Bounds, products: list[tuple[object, ...]],
                 scroll: ListScroll) -> ViewNode:
    def row(i: int, b: Bounds) -> ViewNode:
        asin, title, price, rating = products[i]
        return group(b, [
            text_view(Bounds(240, b.top + 20, b.right - 40, b.top + 120), str(title), shop.rid("item_title")),
            text_view(Bounds(240, b.top + 130, 560, b.top + 200), money(float(price)), shop.rid("item_price")),  # type: ignore[arg-type]
            text_view(Bounds(580, b.top + 130, b.right - 40, b.top + 200), f"{rating} out of 5 stars",
                      shop.rid("item_rating")),
        ], shop.rid("search_result_item"), on_click=lambda: shop.open(DETAILS, asin=asin))
    return row_list(bounds, ROW, len(products), row, shop.rid("search_results_list"),
                    "No results. Try checking your spelling or use more general terms", shop.rid("no_results"),
                    scroll)


class SearchActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        shop, w, top = self.store, screen.right, screen.top
        assert isinstance(shop, Shopping)
        query = self.intent.extra_str("query") or ""
        products = shop.search(query)
        return [
            text_view(Bounds(40, top + 20, w - 40, top + 160), query, shop.rid("chrome_search_hint_view")),
            text_view(Bounds(40, top + 170, w - 40, top + 250), f"{len(products)} results for \"{query}\"",
                      shop.rid("results_count")),
            product_list(shop, Bounds(0, top + 260, w, screen.bottom), products, self.scroll),
        ]


class DetailsActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        shop, w, top = self.store, screen.right, screen.top
        assert isinstance(shop, Shopping)
        asin = self.intent.extra_str("asin") or ""
        product = shop.product(asin)
        if product is None:
            return [text_view(Bounds(40, top + 200, w - 40, top + 400), "Sorry, this item is unavailable",
                              shop.rid("unavailable"))]
        title, price, rating = product
        return [
            text_view(Bounds(40, top + 40, w - 40, top + 200), title, shop.rid("title")),
            text_view(Bounds(40, top + 220, w - 40, top + 290), f"{rating} out of 5 stars", shop.rid("acrCustomerReviewText")),
            text_view(Bounds(40, top + 700, w - 40, top + 800), money(price), shop.rid("priceblock_ourprice")),
            button(Bounds(40, top + 840, w - 40, top + 980), "Add to Cart", shop.rid("add-to-cart-button"),
                   on_click=lambda: shop.add_to_cart(asin)),
            button(Bounds(40, top + 1000, w - 40, top + 1140), "Buy Now", shop.rid("buy-now-button"),
                   on_click=lambda: shop.open(CHECKOUT, asin=asin)),
        ]


class CartActivity(AccountActivity):
    def content(self, screen: Bounds) -> list[ViewNode]:
        shop, w, top = self.store, screen.right, screen.top
        assert isinstance(shop, Shopping)
        lines = shop.cart_lines()
        total = sum(q * p for _, _, _, p, q in lines)

        def row(i: int, b: Bounds) -> ViewNode:
            cart_id, _, title, price, qty = lines[i]
            return group(b, [
                text_view(Bounds(40, b.top + 20, w - 300, b.top + 120), title, shop.rid("sc-product-title")),
                text_view(Bounds(40, b.top + 130, 400, b.top + 200), money(price), shop.rid("sc-product-price")),
                text_view(Bounds(420, b.top + 130, 640, b.top + 200), f"Qty: {qty}", shop.rid("a-autoid-0-announce")),
                button(Bounds(w - 260, b.top + 120, w - 40, b.top + 210), "Delete", shop.rid("sc-action-delete"),
                       on_click=lambda: shop.remove_from_cart(cart_id)),
            ], shop.rid("sc-item"))
        views = [text_view(Bounds(40, top + 20, w - 40, top + 140), f"Subtotal ({sum(l[4] for l in lines)} items): {money(total)}",
                           shop.rid("sc-subtotal-amount-activecart"))]
        if lines:
            views.append(button(Bounds(40, top + 160, w - 40, top + 300), "Proceed to checkout",
                                shop.rid("sc-buy-box-ptc-button"), on_click=lambda: shop.open(CHECKOUT)))
        views.append(row_list(Bounds(0, top + 320, w, screen.bottom), ROW, len(lines), row, shop.rid("sc-active-cart"),
                              "Your Amazon Cart is empty", shop.rid("sc-empty-cart"), self.scroll))
        return views


class CheckoutActivity(AccountActivity):
    """Buy Now (one item, `asin` extra) or the whole cart; "Place your order" places it."""

    def __init__(self, app: AccountApp, name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.placed = False

    def content(self, screen: Bounds) -> list[ViewNode]:
        shop, w, top = self.store, screen.right, screen.top
        assert isinstance(shop, Shopping)
        if self.placed:
            return [text_view(Bounds(40, top + 200, w - 40, top + 340), "Order placed, thanks!", shop.rid("thankyou_title"))]
        lines = shop.checkout_lines(self.intent.extra_str("asin"))
        total = sum(q * p for _, _, _, p, q in lines)
        views = [text_view(Bounds(40, top + 20, w - 40, top + 140), "Review your order", shop.rid("checkout_title")),
                 text_view(Bounds(40, top + 160, w - 40, top + 260), f"Deliver to {shop.account_name()}",
                           shop.rid("shipping_address"))]
        for i, (_, _, title, price, qty) in enumerate(lines[:6]):
            views.append(text_view(Bounds(40, top + 280 + i * 110, w - 40, top + 380 + i * 110),
                                   f"{title} — Qty: {qty} — {money(price)}", shop.rid("checkout_item")))
        views.append(text_view(Bounds(40, screen.bottom - 420, w - 40, screen.bottom - 320),
                               f"Order total: {money(total)}", shop.rid("order_total")))
        views.append(button(Bounds(40, screen.bottom - 280, w - 40, screen.bottom - 120), "Place your order",
                            shop.rid("placeYourOrder"), on_click=lambda: self._place(lines)))
        return views

    def _place(self, lines: list[tuple[int, str, str, float, int]]) -> None:
        shop = self.store
        assert isinstance(shop, Shopping)
        if lines:
            shop.place_order(lines, from_cart=self.intent.extra_str("asin") is None)
            self.placed = True


class Shopping(AccountApp):
    PACKAGE = PACKAGE
    LABEL = "Amazon Shopping"
    LAUNCHER_ACTIVITY = STARTUP
    ACTIVITIES = (STARTUP, SEARCH, DETAILS, CART, CHECKOUT)
    VERSION_NAME = "28.4.0.100"
    VERSION_CODE = 1241286011
    SIGN_IN = ("Sign-In", "ap_email", "ap_password", "signInSubmit", "Sign in")
    SCREENS = {STARTUP: HomeActivity, SEARCH: SearchActivity, DETAILS: DetailsActivity, CART: CartActivity,
               CHECKOUT: CheckoutActivity}

    def create_providers(self) -> list[SqliteProvider]:
        return [ShopProvider()]

    def search(self, query: str) -> list[tuple[object, ...]]:
        words = query.lower().split()
        rows = self.rows("SELECT asin, title, price, rating FROM products ORDER BY _id")
        return [r for r in rows if all(word in str(r[1]).lower() for word in words)]

    def product(self, asin: str) -> tuple[str, float, float] | None:
        rows = self.rows("SELECT title, price, rating FROM products WHERE asin = ?", (asin,))
        return (str(rows[0][0]), float(rows[0][1]), float(rows[0][2])) if rows else None  # type: ignore[arg-type]

    def account_name(self) -> str:
        rows = self.rows("SELECT name FROM account ORDER BY _id LIMIT 1")
        return str(rows[0][0]) if rows else ""

    def cart_count(self) -> int:
        return int(self.rows("SELECT COALESCE(SUM(quantity), 0) FROM cart")[0][0])  # type: ignore[arg-type]

    def add_to_cart(self, asin: str) -> None:
        if self.rows("SELECT 1 FROM cart WHERE asin = ?", (asin,)):
            self.db.db.execute("UPDATE cart SET quantity = quantity + 1 WHERE asin = ?", (asin,))
        else:
            self.db.db.execute("INSERT INTO cart (asin, quantity) VALUES (?, 1)", (asin,))

    def remove_from_cart(self, cart_id: int) -> None:
        self.db.db.execute("DELETE FROM cart WHERE _id = ?", (cart_id,))

    def cart_lines(self) -> list[tuple[int, str, str, float, int]]:
        return self.rows("SELECT c._id, c.asin, p.title, p.price, c.quantity FROM cart c JOIN products p "
                         "ON p.asin = c.asin ORDER BY c._id")  # type: ignore[return-value]

    def checkout_lines(self, asin: str | None) -> list[tuple[int, str, str, float, int]]:
        if asin is None:
            return self.cart_lines()
        return self.rows("SELECT 0, asin, title, price, 1 FROM products WHERE asin = ?", (asin,))  # type: ignore[return-value]

    def place_order(self, lines: list[tuple[int, str, str, float, int]], from_cart: bool) -> None:
        for _, asin, title, price, qty in lines:
            self.db.db.execute("INSERT INTO orders (asin, title, quantity, total) VALUES (?, ?, ?, ?)",
                               (asin, title, qty, round(price * qty, 2)))
        if from_cart:
            self.db.db.execute("DELETE FROM cart")

    def resolve(self, intent: Intent) -> str | None:
        url = urlparse(intent.data or "")
        if intent.action == ACTION_VIEW and url.scheme in ("http", "https") and url.netloc.endswith("amazon.com"):
            if url.path.startswith("/dp/") or url.path == "/s":
                return SEARCH if url.path == "/s" else DETAILS
        if intent.action == ACTION_SEARCH and intent.package in (None, PACKAGE):
            return SEARCH
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        url = urlparse(intent.data or "")
        if activity == SEARCH and url.path == "/s":
            intent.extras["query"] = unquote_plus(parse_qs(url.query).get("k", [""])[0])
        if activity == DETAILS and url.path.startswith("/dp/"):
            intent.extras["asin"] = url.path[len("/dp/"):].strip("/")
        return self.SCREENS.get(activity, HomeActivity)(self, activity, intent)
