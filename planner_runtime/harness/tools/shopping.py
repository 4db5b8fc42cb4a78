"""Shopping tools over the Amazon Shopping app: ``search_products`` opens the search-results
deep link (`https://www.amazon.com/s?k=...`, which the app handles) and reads the list, scrolling
it to its end (or to a bound it then names); ``buy_product`` (sensitive: purchase) finds the
product the same way, taps it, "Buy Now" and "Place your order", and checks the confirmation."""

from __future__ import annotations

from urllib.parse import quote_plus

from pydantic import Field

from device_farm.android import Intent
from device_farm.hierarchy import Screen
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolResult
from planner_runtime.harness.tools.storefront import (
    by_id, find_in_list, has, money_value, open_screen, read_list, settle, tap, tap_id,
)

APP = app_named("Shopping")

VIEW = "android.intent.action.VIEW"
SHOWN = 40  # results one answer carries: a search's list may go on for pages


def _results(ctx: ToolContext, query: str) -> Screen:
    url = f"https://www.amazon.com/s?k={quote_plus(query)}"
    return open_screen(ctx, Intent(action=VIEW, data=url),
                       "Amazon Shopping", lambda s: has("item_title")(s) or has("no_results")(s))


class SearchProductsArgs(ToolArgs):
    query: str = Field(min_length=1, description="What to search for, e.g. 'usb c charger'")


class SearchProducts(AppTool):
    name = "search_products"
    app = APP.name
    description = f"Search Amazon Shopping and return the results, up to {SHOWN} (title and price in dollars)."
    Args = SearchProductsArgs

    def act(self, ctx: ToolContext, args: SearchProductsArgs, package: str) -> ToolResult:
        read = read_list(ctx, _results(ctx, args.query), "item_title", ("item_price",), max_rows=SHOWN)
        result: dict[str, object] = {"query": args.query,
                                     "results": [{"title": r["item_title"].text, "price": money_value(r["item_price"].text)} for r in read.rows]}
        if (more := read.more("results")) is not None:
            result["more"] = more + ", or search with more words"
        return ToolResult(result=result, observe=True)


class BuyProductArgs(ToolArgs):
    query: str = Field(min_length=1, description="Search words that find the product")
    title: str = Field(default="", description="Words of the exact product title to pick among the results; empty = the first result")


class BuyProduct(AppTool):
    name = "buy_product"
    app = APP.name
    description = "Buy one unit of a product on Amazon Shopping now (Buy Now, then Place your order). Spends the user's money."
    Args = BuyProductArgs
    sensitive = Sensitivity.purchase

    def act(self, ctx: ToolContext, args: BuyProductArgs, package: str) -> ToolResult:
        screen = _results(ctx, args.query)
        titles = by_id(screen, "item_title")
        if args.title or not titles:
            chosen, screen = find_in_list(ctx, screen, "item_title", args.title or args.query, "product")
        else:
            chosen = titles[0]
        tap(ctx, chosen)
        screen = settle(ctx, "Amazon Shopping", has("buy-now-button"))
        tap_id(ctx, screen, "buy-now-button", "Buy Now button")
        screen = settle(ctx, "Amazon Shopping", has("placeYourOrder"))
        total = by_id(screen, "order_total")
        tap_id(ctx, screen, "placeYourOrder", "Place your order button")
        settle(ctx, "Amazon Shopping", has("thankyou_title"))
        return ToolResult(result={"ordered": chosen.text, "total": money_value(total[0].text) if total else None}, observe=True)


TOOLS = (SearchProducts, BuyProduct)
