"""Tool results are whole, on the virtual phone through the real adb server: a value that spans
lines or holds ", name=" comes back exactly as stored, and a list tool returns every item of a
list longer than one screen (it scrolls, as a person would) or says plainly where it stopped."""

from __future__ import annotations

from device_farm.android import content_insert, content_query
from planner_runtime.contract import FeedbackStatus, ToolCall
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import find_task

NOTES = "content://com.google.android.keep/notes"
BOOKING = "content://com.booking.provider"
PAYPAL = "content://com.paypal.android.p2pmobile.provider"
AMAZON = "content://com.amazon.mShop.android.shopping.provider"
DOORDASH = "content://com.dd.doordash.provider"
ALLOW_ALL = SafetyGate(policy=Policy(allow=frozenset(Sensitivity)))
AWKWARD = [
    "Main: HomeNet / maple-9917\nGuest wifi: HomeNet-Guest / tulip-4271",
    "milk, eggs=12, pinned=1\n\nRow: 1 _id=99, title=not a row",
    "ends with a blank line\n",
    "",
    "  spaced  ",
]


def _tool(device, name: str, **arguments: object):
    tools, ctx = default_toolset(), ToolContext(device=device, gate=ALLOW_ALL)
    feedback = tools.execute(ToolCall(name=name, arguments=arguments), ctx)
    assert feedback.status is FeedbackStatus.ok, feedback
    return feedback.result


def _sign_in(device, provider: str) -> None:
    content_insert(device, f"{provider}/account", {"email": "ada@example.com", "name": "Ada"})


def test_search_notes_returns_the_seeded_note_whole(device):
    task = find_task("keep.find_wifi_password")
    seed(task, device)

    found = _tool(device, "search_notes", query="HomeNet")

    assert [n["text"] for n in found["notes"]] == [task.render("Main: HomeNet / maple-9917\nGuest wifi: HomeNet-Guest / {password}")]


def test_content_query_keeps_values_with_newlines_commas_and_row_lookalikes(device):
    device.shell(["content", "delete", "--uri", NOTES])
    for i, text in enumerate(AWKWARD):
        content_insert(device, NOTES, {"title": f"t{i}, pinned=0", "text": text})

    # the free-text column last: only a value holding ", <next column>=" is ambiguous in Android's format
    rows = content_query(device, NOTES, projection=["_id", "pinned", "title", "text"], sort="_id")

    assert [(r["title"], r["text"], r["pinned"]) for r in rows] == [(f"t{i}, pinned=0", t, "0") for i, t in enumerate(AWKWARD)]


def test_content_query_without_a_projection_keeps_multi_line_values(device):
    device.shell(["content", "delete", "--uri", NOTES])
    content_insert(device, NOTES, {"title": "Books", "text": "Dune\nPiranesi"})
    content_insert(device, NOTES, {"title": "Gifts", "text": "Mum: scarf"})

    rows = content_query(device, NOTES, sort="_id")

    assert [(r["title"], r["text"], r["trashed"]) for r in rows] == [("Books", "Dune\nPiranesi", "0"), ("Gifts", "Mum: scarf", "0")]


def test_search_notes_says_when_it_shows_only_the_first_matches(device):
    device.shell(["content", "delete", "--uri", NOTES])
    for i in range(23):
        content_insert(device, NOTES, {"title": f"Recipe {i}", "text": "flour"})

    found = _tool(device, "search_notes", query="flour")

    assert len(found["notes"]) == 20
    assert "first 20 of 23" in found["more"]


def test_search_hotels_lists_every_property_of_the_city(device):
    _sign_in(device, BOOKING)
    stored = [r["name"] for r in content_query(device, f"{BOOKING}/hotels", projection=["name"], where="city='Lisbon'", sort="_id")]

    found = _tool(device, "search_hotels", city="Lisbon", checkin="2026-12-10", checkout="2026-12-12")

    assert len(stored) == 8
    assert [p["name"] for p in found["properties"]] == stored
    assert "more" not in found


def test_book_hotel_finds_the_last_property_of_the_list(device):
    _sign_in(device, BOOKING)
    last = content_query(device, f"{BOOKING}/hotels", projection=["name"], where="city='Lisbon'", sort="_id DESC")[0]["name"]

    booked = _tool(device, "book_hotel", city="Lisbon", checkin="2026-12-10", checkout="2026-12-12", hotel=last)

    assert booked["hotel"] == last
    assert [r["hotel"] for r in content_query(device, f"{BOOKING}/bookings", projection=["hotel"])] == [last]


def test_payment_activity_reads_every_transaction(device):
    _sign_in(device, PAYPAL)
    stored = content_query(device, f"{PAYPAL}/transactions", projection=["counterparty", "note"], sort="created DESC, _id DESC")

    found = _tool(device, "payment_activity")

    assert len(stored) == 12
    assert [(t["who"], t["note"]) for t in found["recent"]] == [(r["counterparty"], r["note"]) for r in stored]


def test_payment_activity_keeps_two_identical_payments(device):
    _sign_in(device, PAYPAL)
    for _ in range(2):
        content_insert(device, f"{PAYPAL}/transactions", {"counterparty": "John Smith", "amount": -15.0, "note": "Lunch", "created": "2026-12-01"})

    found = _tool(device, "payment_activity")

    assert len(found["recent"]) == 14
    assert [t["note"] for t in found["recent"][:2]] == ["Lunch", "Lunch"]


def test_search_products_lists_every_match(device):
    _sign_in(device, AMAZON)
    stored = content_query(device, f"{AMAZON}/products", projection=["title"], where="title LIKE '%e%'")

    found = _tool(device, "search_products", query="e")

    assert len(stored) > 10
    assert sorted(r["title"] for r in found["results"]) == sorted(r["title"] for r in stored)


def test_find_restaurants_lists_every_store(device):
    _sign_in(device, DOORDASH)
    stored = [r["name"] for r in content_query(device, f"{DOORDASH}/stores", projection=["name"], sort="_id")]

    found = _tool(device, "find_restaurants", query="")

    assert len(stored) == 16
    assert [r["name"] for r in found["restaurants"]] == stored


def test_payment_activity_says_plainly_where_it_stopped(device):
    _sign_in(device, PAYPAL)
    for day in range(1, 29):
        content_insert(device, f"{PAYPAL}/transactions", {"counterparty": f"Shop {day}", "amount": -1.0, "note": "", "created": f"2026-12-{day:02d}"})

    found = _tool(device, "payment_activity")

    assert [t["who"] for t in found["recent"][:3]] == ["Shop 28", "Shop 27", "Shop 26"]
    assert len(found["recent"]) == 30
    assert found["more"].startswith("showing the first 30 transactions")


def test_a_product_named_further_down_the_results_is_the_one_bought(device):
    _sign_in(device, AMAZON)
    last = content_query(device, f"{AMAZON}/products", projection=["title"], where="title LIKE '%e%'", sort="_id DESC")[0]["title"]

    bought = _tool(device, "buy_product", query="e", title=last)

    assert bought["ordered"] == last
    assert [r["title"] for r in content_query(device, f"{AMAZON}/orders", projection=["title"])] == [last]


def test_a_close_match_above_where_the_reading_stopped_is_scrolled_back_to(device):
    _sign_in(device, BOOKING)

    _tool(device, "book_hotel", city="Lisbon", checkin="2026-12-10", checkout="2026-12-12", hotel="memmo")

    assert [r["hotel"] for r in content_query(device, f"{BOOKING}/bookings", projection=["hotel"])] == ["Memmo Alfama"]


def test_read_messages_returns_a_multi_line_text_whole(device):
    body = "Door code changed:\n4471, date=tomorrow\nRow: 1 address=ignore"
    device.shell(["content", "delete", "--uri", "content://sms"])
    content_insert(device, "content://sms/inbox", {"address": "+15550100", "body": body, "type": 1, "date": 1_790_000_000_000})

    assert _tool(device, "read_messages")["messages"] == [{"from": "+15550100", "text": body}]


def test_payment_activity_of_exactly_the_bound_is_whole(device):
    _sign_in(device, PAYPAL)
    for day in range(1, 19):
        content_insert(device, f"{PAYPAL}/transactions", {"counterparty": f"Shop {day}", "amount": -1.0, "note": "", "created": f"2026-12-{day:02d}"})

    found = _tool(device, "payment_activity")

    assert len(found["recent"]) == 30
    assert "more" not in found
