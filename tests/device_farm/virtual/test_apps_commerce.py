"""The commerce apps (Amazon Shopping, DoorDash, Booking.com, PayPal) on the virtual phone,
driven only through adb (`am start`, `content`) and uiautomator2's public API."""

from __future__ import annotations

import uiautomator2 as u2

AMAZON = "com.amazon.mShop.android.shopping"
SHOP = "content://com.amazon.mShop.android.shopping.provider"


def _sign_in_by_ui(d: u2.Device, package: str, email: str = "ada@example.com") -> None:
    d(resourceId=f"{package}:id/{'ap_email' if package == AMAZON else 'email'}").set_text(email)
    d(className="android.widget.EditText", instance=1).set_text("hunter2")
    d(className="android.widget.Button", textMatches="(?i)(sign in|log in|continue)").click()


def test_amazon_sign_in_search_buy_now_and_cart_checkout(virtual_phone):
    adb = virtual_phone.device
    d = u2.connect(adb)
    d.app_start(AMAZON)
    assert d(text="Sign in").exists and d(resourceId=f"{AMAZON}:id/ap_password").exists
    assert adb.shell(f"content query --uri {SHOP}/account") == "No result found."
    d(resourceId=f"{AMAZON}:id/ap_email").set_text("ada@example.com")
    d(resourceId=f"{AMAZON}:id/ap_password").set_text("hunter2")
    d(text="Sign in").click()
    assert "email=ada@example.com" in adb.shell(f"content query --uri {SHOP}/account")
    home = d.dump_hierarchy()
    assert 'scrollable="true"' in home and "Echo Dot" in home  # 24 deals: more than fit
    d(resourceId=f"{AMAZON}:id/chrome_search_hint_view").set_text("kindle")
    d(description="Search").click()
    assert d(text='2 results for "kindle"').exists
    d(textContains="Kindle Paperwhite").click()
    assert d(resourceId=f"{AMAZON}:id/priceblock_ourprice").get_text() == "$149.99"
    d(text="Buy Now").click()
    assert d(text="Order total: $149.99").exists
    d.press("back")
    d(text="Add to Cart").click()
    d.press("back")
    d.press("back")
    assert adb.shell(f"content query --uri {SHOP}/orders") == "No result found."  # nothing bought yet
    adb.shell("am start -a android.intent.action.VIEW -d 'https://www.amazon.com/s?k=usb+c+charger'")
    assert d(textContains="Anker USB C Charger").exists
    d(textContains="Anker USB C Charger").click()
    d(text="Add to Cart").click()
    d(description="Cart").exists  # product page has no cart button: go through the home screen
    d.app_start(AMAZON)
    d(description="Cart").click()
    assert d(textStartsWith="Subtotal (2 items): $165.98").exists
    d(text="Delete", instance=0).click()
    d(text="Proceed to checkout").click()
    d(text="Place your order").click()
    assert d(text="Order placed, thanks!").exists
    rows = adb.shell(f"content query --uri {SHOP}/orders --projection title:quantity:total")
    assert rows == "Row: 0 title=Anker USB C Charger 20W, quantity=1, total=15.99"
    assert adb.shell(f"content query --uri {SHOP}/cart") == "No result found."


def test_amazon_seeded_account_and_product_deep_link(virtual_phone):
    adb = virtual_phone.device
    adb.shell(f"content insert --uri {SHOP}/account --bind email:s:grace@example.com")
    adb.shell(f"content insert --uri {SHOP}/products --bind asin:s:B0TEST0001 --bind title:s:'Test Kettle' --bind price:d:12.5")
    out = adb.shell2("am start -a android.intent.action.VIEW -d https://www.amazon.com/dp/B0TEST0001")
    assert out.returncode == 0
    d = u2.connect(adb)
    assert d(resourceId=f"{AMAZON}:id/title").get_text() == "Test Kettle"
    assert d.app_current()["activity"].endswith("ProductDetailsActivity")


DOORDASH = "com.dd.doordash"
DD = "content://com.dd.doordash.provider"


def test_doordash_search_menu_cart_and_order(virtual_phone):
    adb = virtual_phone.device
    d = u2.connect(adb)
    d.app_start(DOORDASH)
    assert d(text="Continue to Sign In").exists
    d(resourceId=f"{DOORDASH}:id/email").set_text("ada@example.com")
    d(resourceId=f"{DOORDASH}:id/password").set_text("hunter2")
    d(text="Continue to Sign In").click()
    assert d(resourceId=f"{DOORDASH}:id/recycler_view", scrollable=True).exists  # 16 stores: more than fit
    d(resourceId=f"{DOORDASH}:id/search_bar").set_text("thai")
    assert d(resourceId=f"{DOORDASH}:id/store_name").count == 1
    d(text="Thai Basil").click()
    d(description="Add Pad Thai").click()
    d(description="Add Pad Thai").click()
    d(description="Add Spring Rolls").click()
    d(text="View cart (3)").click()
    assert d(text="2x Pad Thai $29.00").exists and d(text="Total $37.94").exists
    d(text="Place Order").click()
    assert d(textStartsWith="Order placed!").exists
    assert adb.shell(f"content query --uri {DD}/orders --projection store:items:total") == \
        "Row: 0 store=Thai Basil, items=2x Pad Thai, 1x Spring Rolls, total=37.94"
    assert adb.shell(f"content query --uri {DD}/cart") == "No result found."


def test_doordash_store_deep_link_and_new_cart_per_store(virtual_phone):
    adb = virtual_phone.device
    adb.shell(f"content insert --uri {DD}/account --bind email:s:grace@example.com")
    assert adb.shell2("am start -a android.intent.action.VIEW -d https://www.doordash.com/store/luigis-pizzeria-2/").returncode == 0
    d = u2.connect(adb)
    assert d(resourceId=f"{DOORDASH}:id/store_header_name").get_text() == "Luigi's Pizzeria"
    d(description="Add Garlic Knots").click()
    adb.shell("am start -a android.intent.action.VIEW -d doordash://store/3")
    d(description="Add Miso Soup").click()
    assert d(text="View cart (1)").exists  # another store's dish started a new cart
    d.press("back")
    assert d(text="Luigi's Pizzeria").exists


BOOKING = "com.booking"
BK = "content://com.booking.provider"


def test_booking_search_form_results_hotel_and_booking(virtual_phone):
    adb = virtual_phone.device
    d = u2.connect(adb)
    d.app_start(BOOKING)
    assert d(text="Sign in or create an account").exists
    d(resourceId=f"{BOOKING}:id/email_input").set_text("ada@example.com")
    d(resourceId=f"{BOOKING}:id/password_input").set_text("hunter2")
    d(text="Continue with email").click()
    d(resourceId=f"{BOOKING}:id/search_destination").set_text("Lisbon")
    d(resourceId=f"{BOOKING}:id/search_checkin").set_text("2026-12-10")
    d(resourceId=f"{BOOKING}:id/search_checkout").set_text("2026-12-12")
    d(text="Search").click()
    assert d(text="Lisbon · 2026-12-10 – 2026-12-12").exists and d(text="8 properties").exists
    assert d(resourceId=f"{BOOKING}:id/results_list", scrollable=True).exists
    d(text="Lisboa Pessoa Hotel").click()
    assert d(text="$396.00 for 2 nights").exists
    d(text="Reserve").click()
    assert d(text="Guest: ada@example.com").exists
    d(text="Complete booking").click()
    assert d(textStartsWith="You're booked!").exists
    assert adb.shell(f"content query --uri {BK}/bookings --projection hotel:checkin:nights:total") == \
        "Row: 0 hotel=Lisboa Pessoa Hotel, checkin=2026-12-10, nights=2, total=396.0"


def test_booking_search_link(virtual_phone):
    adb = virtual_phone.device
    adb.shell(f"content insert --uri {BK}/account --bind email:s:grace@example.com")
    url = "'https://www.booking.com/searchresults.html?ss=Tokyo&checkin=2026-03-01&checkout=2026-03-04'"
    assert adb.shell2(f"am start -a android.intent.action.VIEW -d {url}").returncode == 0
    d = u2.connect(adb)
    assert d(text="Park Hotel Tokyo").exists and d(text="$780.00 for 3 nights").exists
    assert d.app_current()["activity"].endswith("SearchResultsActivity")


PAYPAL = "com.paypal.android.p2pmobile"
PP = "content://com.paypal.android.p2pmobile.provider"


def test_paypal_balance_activity_and_send(virtual_phone):
    adb = virtual_phone.device
    d = u2.connect(adb)
    d.app_start(PAYPAL)
    assert d(text="Log in to PayPal").exists
    d(resourceId=f"{PAYPAL}:id/email").set_text("ada@example.com")
    d(resourceId=f"{PAYPAL}:id/password").set_text("hunter2")
    d(text="Log In").click()
    assert d(resourceId=f"{PAYPAL}:id/balance_amount").get_text() == "$250.00"
    assert d(resourceId=f"{PAYPAL}:id/activity_list", scrollable=True).exists  # 12 transactions
    assert d(resourceId=f"{PAYPAL}:id/activity_item_title", instance=0).get_text() == "John Smith"
    d(text="Send").click()
    d(resourceId=f"{PAYPAL}:id/search_field").set_text("Maria Garcia")
    d(resourceId=f"{PAYPAL}:id/amount_edit_text").set_text("300")
    d(text="Send Now").click()
    assert d(textContains="enough money").exists  # more than the balance: refused
    d(resourceId=f"{PAYPAL}:id/amount_edit_text").set_text("20.50")
    d(resourceId=f"{PAYPAL}:id/add_note").set_text("Tickets")
    d(text="Send Now").click()
    assert d(text="You sent $20.50 USD to Maria Garcia").exists
    d(text="Done").click()
    assert d(resourceId=f"{PAYPAL}:id/balance_amount").get_text() == "$229.50"
    assert adb.shell(f"content query --uri {PP}/transactions --projection counterparty:amount:note --where 'amount=-20.5'") == \
        "Row: 0 counterparty=Maria Garcia, amount=-20.5, note=Tickets"


def test_paypal_me_link_prefills_the_send_screen(virtual_phone):
    adb = virtual_phone.device
    adb.shell(f"content insert --uri {PP}/account --bind email:s:grace@example.com")
    assert adb.shell2("am start -a android.intent.action.VIEW -d https://www.paypal.me/alexchen/15").returncode == 0
    d = u2.connect(adb)
    assert d(resourceId=f"{PAYPAL}:id/search_field").get_text() == "alexchen"
    assert d(resourceId=f"{PAYPAL}:id/amount_edit_text").get_text() == "15"
    assert adb.shell(f"content query --uri {PP}/balance --projection amount") == "Row: 0 amount=250.0"


def test_each_commerce_list_scrolls_to_its_last_row_and_back(virtual_phone):
    adb = virtual_phone.device
    for uri in (SHOP, DD, BK, "content://com.paypal.android.p2pmobile.provider"):
        adb.shell(f"content insert --uri {uri}/account --bind email:s:ada@example.com")
    d = u2.connect(adb)
    lisbon = "'https://www.booking.com/searchresults.html?ss=Lisbon&checkin=2026-12-10&checkout=2026-12-12'"
    screens = (  # how to open the list, a row id, its first and last rows
        (f"monkey -p {AMAZON} -c android.intent.category.LAUNCHER 1", f"{AMAZON}:id/item_title",
         "Echo Dot (3rd Gen) Smart speaker with Alexa", "Yoga Mat 1/4 inch Extra Thick"),
        (f"monkey -p {DOORDASH} -c android.intent.category.LAUNCHER 1", f"{DOORDASH}:id/store_name",
         "Thai Basil", "Poke Bar"),
        (f"am start -a android.intent.action.VIEW -d {lisbon}", f"{BOOKING}:id/sr_hotel_name",
         "Memmo Alfama", "Ibis Lisboa Saldanha"),
        ("monkey -p com.paypal.android.p2pmobile -c android.intent.category.LAUNCHER 1",
         "com.paypal.android.p2pmobile:id/activity_item_subtitle", "2026-11-26 · Dinner", "2026-11-01 · Premium"),
    )
    for open_it, rid, first, last in screens:
        adb.shell(open_it)
        assert d(resourceId=rid)[0].get_text() == first, rid
        assert not d(text=last).exists, rid
        for _ in range(4):
            d.swipe(540, 1900, 540, 700, 0.2)
        assert d(text=last).exists and not d(text=first).exists, rid
        assert d(resourceId=rid)[-1].get_text() == last, rid  # stops at the end
        for _ in range(4):
            d.swipe(540, 700, 540, 2000, 0.2)
        assert d(resourceId=rid)[0].get_text() == first, rid
        adb.shell("input keyevent HOME")


def test_a_scrolled_row_opens_its_own_page(virtual_phone):
    adb = virtual_phone.device
    adb.shell(f"content insert --uri {SHOP}/account --bind email:s:ada@example.com")
    d = u2.connect(adb)
    d.app_start(AMAZON)
    for _ in range(4):
        d.swipe(540, 1900, 540, 700, 0.2)
    d(text="Cuisinart Coffee Maker 12-Cup").click()
    assert d(resourceId=f"{AMAZON}:id/priceblock_ourprice").get_text() == "$79.95"
