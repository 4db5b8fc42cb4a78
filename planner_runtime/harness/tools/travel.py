"""Travel tools over Booking.com: ``search_hotels`` opens the search-results link the app handles
(`booking.com/searchresults.html?ss=...&checkin=...&checkout=...`) and reads the properties with
their review scores and stay prices; ``book_hotel`` (sensitive: purchase) opens one of them, taps
"Reserve" and "Complete booking", and checks the confirmation. Both scroll the results to their end."""

from __future__ import annotations

from datetime import date
from urllib.parse import urlencode

from pydantic import Field, model_validator

from device_farm.android import Intent
from device_farm.hierarchy import Screen
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolResult
from planner_runtime.harness.tools.storefront import (
    by_id, find_in_list, has, money_value, open_screen, read_list, settle, tap, tap_id,
)

APP = app_named("Travel")

BRAND = "Booking.com"  # the name the app shows, for hints
DAY = r"^\d{4}-\d{2}-\d{2}$"


class StayArgs(ToolArgs):
    city: str = Field(min_length=1, description="Destination city, e.g. 'Lisbon'")
    checkin: str = Field(pattern=DAY, description="Check-in date, YYYY-MM-DD")
    checkout: str = Field(pattern=DAY, description="Check-out date, YYYY-MM-DD (after check-in)")

    @model_validator(mode="after")
    def _dates(self) -> "StayArgs":
        try:
            ok = date.fromisoformat(self.checkout) > date.fromisoformat(self.checkin)
        except ValueError as exc:
            raise ValueError(f"not a calendar date: {exc}") from None
        if not ok:
            raise ValueError("checkout must be after checkin")
        return self


def _results(ctx: ToolContext, args: StayArgs) -> Screen:
    url = "https://www.booking.com/searchresults.html?" + urlencode({"ss": args.city, "checkin": args.checkin, "checkout": args.checkout})
    return open_screen(ctx, Intent(action="android.intent.action.VIEW", data=url), BRAND,
                       lambda s: has("sr_hotel_name")(s) or has("sr_empty")(s))


class SearchHotels(AppTool):
    name = "search_hotels"
    app = APP.name
    description = "Search Booking.com for places to stay in a city for given dates; returns name, review score (of 10) and the price of the whole stay in USD."
    Args = StayArgs

    def act(self, ctx: ToolContext, args: StayArgs, package: str) -> ToolResult:
        read = read_list(ctx, _results(ctx, args), "sr_hotel_name", ("review_score_badge", "price_view_price"))
        found = [{"name": r["sr_hotel_name"].text, "score": float(r["review_score_badge"].text),
                  "total": money_value(r["price_view_price"].text.split(" for ")[0])} for r in read.rows]
        result: dict[str, object] = {"city": args.city, "checkin": args.checkin, "checkout": args.checkout, "properties": found}
        if (more := read.more("properties")) is not None:
            result["more"] = more
        return ToolResult(result=result, observe=True)


class BookHotelArgs(StayArgs):
    hotel: str = Field(min_length=1, description="The property's name as the search results list it")


class BookHotel(AppTool):
    name = "book_hotel"
    app = APP.name
    description = "Book and pay for a stay at one property on Booking.com for the given dates (Reserve, then Complete booking)."
    Args = BookHotelArgs
    sensitive = Sensitivity.purchase

    def act(self, ctx: ToolContext, args: BookHotelArgs, package: str) -> ToolResult:
        hotel, _ = find_in_list(ctx, _results(ctx, args), "sr_hotel_name", args.hotel, f"property in {args.city}")
        tap(ctx, hotel)
        screen = settle(ctx, BRAND, has("select_room_cta"))
        tap_id(ctx, screen, "select_room_cta", "Reserve button")
        screen = settle(ctx, BRAND, has("action_button"))
        total = by_id(screen, "bp_price")
        tap_id(ctx, screen, "action_button", "Complete booking button")
        settle(ctx, BRAND, has("confirmation_title"))
        return ToolResult(result={"hotel": args.hotel, "checkin": args.checkin, "checkout": args.checkout,
                                  "total": money_value(total[0].text) if total else None}, observe=True)


TOOLS = (SearchHotels, BookHotel)
