"""The commerce suite end to end on the virtual phone: a scripted planner solves each task
through the harness tools (purchases and payments confirmed at the safety gate), the verifier
reads the apps' providers through adb, and a wrong solution per app is judged failed."""

from __future__ import annotations

from planner_runtime.contract import FeedbackStatus
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity

SUITE = {t.id: t for t in builtin_suite("commerce").tasks}


def _yes(tool, category, arguments) -> bool:
    return True


def _run(task_id, script, device, device_ref, store, gate=None):
    task = SUITE[task_id]
    return run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=task,
                    gate=gate or SafetyGate(confirm=_yes))


def _call(name, **arguments):
    return {"name": name, "arguments": arguments}


def _ok(traj):
    bad = [s.feedback for s in traj.steps if s.feedback.status is not FeedbackStatus.ok]
    assert not bad, bad
    assert traj.verdict.success, traj.verdict


def test_shopping_tasks(device, device_ref, store):
    _ok(_run("shopping.buy_product", [_call("buy_product", query="kindle paperwhite"), _call("finish", answer="Ordered")],
             device, device_ref, store))
    traj = _run("shopping.cheapest_price", [_call("search_products", query="airpods"), _call("finish", answer="$99.00")],
                device, device_ref, store)
    _ok(traj)
    assert {"title": "Apple AirPods (2nd Generation) Wireless Earbuds", "price": 99.0} in traj.steps[0].feedback.result["results"]
    _ok(_run("shopping.buy_cheapest_batteries", [_call("search_products", query="AA batteries"),
                                                 _call("buy_product", query="AA batteries", title="Duracell"),
                                                 _call("finish", answer="Ordered Duracell")], device, device_ref, store))
    _ok(_run("shopping.ask_which_headphones", [_call("search_products", query="sony"),
                                               _call("ask_user", question="Which Sony: WH-1000XM4 over-ear or WF-1000XM4 earbuds?"),
                                               _call("buy_product", query="sony", title="WF-1000XM4"),
                                               _call("finish", answer="Ordered")], device, device_ref, store))
    _ok(_run("memory.shopping_usual_coffee_maker", [_call("buy_product", query="coffee maker", title="Cuisinart"),
                                                    _call("finish", answer="Ordered")], device, device_ref, store))


def test_shopping_wrong_solutions_fail(device, device_ref, store):
    # bought without asking which model: the wrong one, and unasked
    traj = _run("shopping.ask_which_headphones", [_call("buy_product", query="sony"), _call("finish", answer="done")],
                device, device_ref, store)
    assert not traj.verdict.success
    assert [c.passed for c in traj.verdict.checks][:2] == [False, True]
    # the batch default gate denies the purchase: nothing is ordered
    traj = _run("shopping.buy_product", [_call("buy_product", query="kindle paperwhite"), _call("finish", answer="done")],
                device, device_ref, store, gate=SafetyGate())
    assert traj.steps[0].feedback.status is FeedbackStatus.blocked
    assert not traj.verdict.success


def test_food_tasks(device, device_ref, store):
    _ok(_run("food.order_dish", [_call("order_food", restaurant="Thai Basil", items=["Pad Thai"]), _call("finish", answer="Ordered")],
             device, device_ref, store))
    _ok(_run("food.order_several", [_call("order_food", restaurant="Luigi's Pizzeria",
                                          items=["Margherita Pizza", "Margherita Pizza", "Garlic Knots"]),
                                    _call("finish", answer="Ordered")], device, device_ref, store))
    traj = _run("food.best_rated_mexican", [_call("find_restaurants", query="mexican"), _call("finish", answer="La Taqueria (4.8★)")],
                device, device_ref, store)
    _ok(traj)
    assert [r["name"] for r in traj.steps[0].feedback.result["restaurants"]] == ["Chipotle Mexican Grill", "La Taqueria"]
    _ok(_run("food.ask_what_to_eat", [_call("ask_user", question="What would you like from Curry House?"),
                                      _call("order_food", restaurant="Curry House", items=["Chicken Tikka Masala", "Garlic Naan"]),
                                      _call("finish", answer="Ordered")], device, device_ref, store))
    _ok(_run("memory.food_usual_coffee_order", [_call("order_food", restaurant="Blue Bottle Coffee", items=["Latte", "Croissant"]),
                                                _call("finish", answer="Ordered")], device, device_ref, store))


def test_food_wrong_solutions_fail(device, device_ref, store):
    # ordered without asking what the user wants: dishes picked for them
    traj = _run("food.ask_what_to_eat", [_call("order_food", restaurant="Curry House", items=["Samosa"]),
                                         _call("finish", answer="done")], device, device_ref, store)
    assert not traj.verdict.success and not traj.verdict.checks[0].passed and not traj.verdict.checks[2].passed
    # a dish that is not on the menu: the tool says so and nothing is ordered
    traj = _run("food.order_dish", [_call("order_food", restaurant="Thai Basil", items=["Pizza"]), _call("finish", answer="done")],
                device, device_ref, store)
    assert traj.steps[0].feedback.error.code.value == "element_not_found"
    assert "Pad Thai" in traj.steps[0].feedback.error.hint
    assert not traj.verdict.success


def _stay(**kw):
    return {"city": "Lisbon", "checkin": "2026-12-10", "checkout": "2026-12-12", **kw}


def test_travel_tasks(device, device_ref, store):
    _ok(_run("travel.book_named_hotel", [_call("book_hotel", **_stay(hotel="Hotel Britania")), _call("finish", answer="Booked")],
             device, device_ref, store))
    traj = _run("travel.cheapest_stay", [_call("search_hotels", city="Paris", checkin="2026-05-01", checkout="2026-05-03"),
                                         _call("finish", answer="Generator Paris, $130.00 for 2 nights")], device, device_ref, store)
    _ok(traj)
    assert {"name": "Generator Paris", "score": 8.1, "total": 130.0} in traj.steps[0].feedback.result["properties"]
    tokyo = {"city": "Tokyo", "checkin": "2026-03-01", "checkout": "2026-03-04"}
    _ok(_run("travel.best_rated_within_budget", [_call("search_hotels", **tokyo),
                                                 _call("book_hotel", **tokyo, hotel="The Gate Hotel Kaminarimon"),
                                                 _call("finish", answer="Booked")], device, device_ref, store))
    _ok(_run("travel.ask_for_dates", [_call("ask_user", question="Which dates should I book?"),
                                      _call("book_hotel", **_stay(checkin="2026-06-05", checkout="2026-06-08", hotel="Memmo Alfama")),
                                      _call("finish", answer="Booked")], device, device_ref, store))
    _ok(_run("memory.travel_usual_paris_hotel", [_call("book_hotel", city="Paris", checkin="2026-09-10", checkout="2026-09-12",
                                                       hotel="Hotel Malte Opera"), _call("finish", answer="Booked")],
             device, device_ref, store))


def test_travel_wrong_solutions_fail(device, device_ref, store):
    # the best-rated hotel overall is over budget
    tokyo = {"city": "Tokyo", "checkin": "2026-03-01", "checkout": "2026-03-04"}
    traj = _run("travel.best_rated_within_budget", [_call("book_hotel", **tokyo, hotel="Park Hotel Tokyo"),
                                                    _call("finish", answer="Booked")], device, device_ref, store)
    assert not traj.verdict.success and not traj.verdict.checks[0].passed
    # dates made up instead of asked for
    traj = _run("travel.ask_for_dates", [_call("book_hotel", **_stay(hotel="Memmo Alfama")), _call("finish", answer="Booked")],
                device, device_ref, store)
    assert not traj.verdict.success and not traj.verdict.checks[0].passed and not traj.verdict.checks[1].passed
    # checkout before checkin is refused before anything runs
    traj = _run("travel.book_named_hotel", [_call("book_hotel", **_stay(checkout="2026-12-09", hotel="Hotel Britania"))],
                device, device_ref, store)
    assert traj.steps[0].feedback.error.code.value == "invalid_arguments" and not traj.verdict.success


def test_payments_tasks(device, device_ref, store):
    _ok(_run("payments.send_money", [_call("send_money", to="Maria Garcia", amount=20.0, note="concert tickets"),
                                     _call("finish", answer="Sent")], device, device_ref, store))
    traj = _run("payments.balance", [_call("skill_payments_balance"), _call("finish", answer="Your balance is $1,234.56")],
                device, device_ref, store)
    _ok(traj)
    assert "$1,234.56" in traj.steps[0].feedback.observation.screen
    traj = _run("payments.total_sent_to_person", [_call("payment_activity"), _call("finish", answer="$37.50 in total")],
                device, device_ref, store)
    _ok(traj)
    assert {"who": "John Smith", "date": "2026-11-27", "note": "Cinema", "amount": -22.5} in traj.steps[0].feedback.result["recent"]
    _ok(_run("payments.ask_amount_before_paying", [_call("ask_user", question="How much should I send Sam?"),
                                                   _call("send_money", to="Sam Taylor", amount=60.0, note="Rent share"),
                                                   _call("finish", answer="Sent $60")], device, device_ref, store))
    _ok(_run("payments.pay_back_from_activity", [_call("payment_activity"),
                                                 _call("send_money", to="Alex Chen", amount=25.0, note="Pizza night"),
                                                 _call("finish", answer="Sent $25")], device, device_ref, store))
    _ok(_run("memory.payments_sister_birthday", [_call("send_money", to="Maria Garcia", amount=50.0, note="Happy birthday"),
                                                 _call("finish", answer="Sent")], device, device_ref, store))


def test_payments_wrong_solutions_and_the_safety_gate(device, device_ref, store):
    # an amount guessed instead of asked for
    traj = _run("payments.ask_amount_before_paying", [_call("send_money", to="Sam Taylor", amount=50.0),
                                                      _call("finish", answer="Sent")], device, device_ref, store)
    assert not traj.verdict.success and not traj.verdict.checks[0].passed and not traj.verdict.checks[2].passed
    # without the user's confirmation (batch default: deny) the payment is blocked and nothing moves
    traj = _run("payments.send_money", [_call("send_money", to="Maria Garcia", amount=20.0), _call("finish", answer="Sent")],
                device, device_ref, store, gate=SafetyGate())
    assert traj.steps[0].feedback.status is FeedbackStatus.blocked
    assert not traj.verdict.success and not traj.verdict.checks[0].passed
    # more than the balance: PayPal refuses and the tool says why
    traj = _run("payments.send_money", [_call("send_money", to="Maria Garcia", amount=500.0), _call("finish", answer="Sent")],
                device, device_ref, store)
    assert "enough money" in traj.steps[0].feedback.error.hint and not traj.verdict.success


def test_listing_every_candidate_from_the_app_fails(device, device_ref, store):
    """Answers that name every place the tool showed contain the right one, and must not pass."""
    for task_id, calls, answer in [
        ("food.best_rated_mexican", [_call("find_restaurants", query="mexican")], "Chipotle Mexican Grill, La Taqueria"),
        ("travel.cheapest_stay", [], "Generator Paris $130, Ibis Paris Gare de Lyon $240"),
        ("shopping.cheapest_price", [_call("search_products", query="airpods")], "$99.00 or $189.99"),
    ]:
        traj = _run(task_id, calls + [_call("finish", answer=answer)], device, device_ref, store)
        assert not traj.verdict.success, task_id
        failed = [c.name for c in traj.verdict.checks if not c.passed]
        assert len(failed) == 1 and failed[0].startswith("the answer does not name"), (task_id, failed)
