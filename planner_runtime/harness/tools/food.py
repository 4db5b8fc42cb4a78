"""Food-delivery tools over DoorDash: ``find_restaurants`` types into the app's search field and
reads the store list to its end; ``order_food`` (sensitive: purchase) opens the store, taps "Add" on each
dish, "View cart" and "Place Order", and checks the order status screen."""

from __future__ import annotations

from pydantic import Field

from device_farm.android import Intent
from device_farm.hierarchy import Screen
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.storefront import (
    by_id, find_in_list, has, money_value, open_screen, pick, read_list, settle, tap, tap_id, type_into,
)

APP = app_named("Food delivery")

BRAND = "DoorDash"  # the name the app shows, for hints


def _stores(ctx: ToolContext, package: str, query: str) -> Screen:
    main = Intent(action="android.intent.action.MAIN", categories=("android.intent.category.LAUNCHER",),
                  component=f"{package}/com.doordash.consumer.ui.MainActivity")
    screen = open_screen(ctx, main, BRAND, has("search_bar"))
    return type_into(ctx, screen, by_id(screen, "search_bar")[0], query)


class FindRestaurantsArgs(ToolArgs):
    query: str = Field(default="", description="A restaurant name or cuisine, e.g. 'thai'; empty lists every store")


class FindRestaurants(AppTool):
    name = "find_restaurants"
    app = APP.name
    description = "Search DoorDash for restaurants by name or cuisine; returns name and details (cuisine, rating, minutes, delivery fee)."
    Args = FindRestaurantsArgs

    def act(self, ctx: ToolContext, args: FindRestaurantsArgs, package: str) -> ToolResult:
        read = read_list(ctx, _stores(ctx, package, args.query), "store_name", ("store_info",))
        result: dict[str, object] = {"query": args.query,
                                     "restaurants": [{"name": r["store_name"].text, "details": r["store_info"].text} for r in read.rows]}
        if (more := read.more("restaurants")) is not None:
            result["more"] = more + ", or search by name or cuisine"
        return ToolResult(result=result, observe=True)


class OrderFoodArgs(ToolArgs):
    restaurant: str = Field(min_length=1, description="The restaurant's name as DoorDash lists it")
    items: list[str] = Field(min_length=1, max_length=10, description="Dish names from its menu; repeat a dish to order it twice")


class OrderFood(AppTool):
    name = "order_food"
    app = APP.name
    description = "Order dishes from one restaurant on DoorDash for delivery and pay for them (Place Order)."
    Args = OrderFoodArgs
    sensitive = Sensitivity.purchase

    def act(self, ctx: ToolContext, args: OrderFoodArgs, package: str) -> ToolResult:
        store, _ = find_in_list(ctx, _stores(ctx, package, args.restaurant), "store_name", args.restaurant, "restaurant")
        tap(ctx, store)
        screen = settle(ctx, BRAND, has("item_name"))
        for dish in args.items:
            names = by_id(screen, "item_name")
            row = pick(names, dish, f"dish on {args.restaurant}'s menu")
            adds = by_id(screen, "add_button")
            add = min(adds, key=lambda a: abs(a.bounds.center[1] - row.bounds.center[1]))
            tap(ctx, add)
            screen = ctx.observe()
        tap_id(ctx, screen, "view_cart_button", "View cart button")
        screen = settle(ctx, BRAND, has("place_order_button"))
        total = by_id(screen, "order_total")
        tap_id(ctx, screen, "place_order_button", "Place Order button")
        screen = settle(ctx, BRAND, lambda s: has("order_status_title")(s) or has("place_order_button")(s))
        if not by_id(screen, "order_status_title"):
            raise ToolFailure(ErrorCode.action_failed, "DoorDash did not confirm the order")
        return ToolResult(result={"restaurant": args.restaurant, "items": args.items,
                                  "total": money_value(total[0].text) if total else None}, observe=True)


TOOLS = (FindRestaurants, OrderFood)
