"""Payment tools over PayPal: ``payment_activity`` opens the app's home screen and reads the
balance and the recent activity (scrolling it to its end); ``send_money`` (sensitive: pay) taps "Send", fills in the
recipient, amount and note, taps "Send Now" and checks the confirmation (or reports why PayPal
refused, e.g. not enough balance)."""

from __future__ import annotations

from pydantic import Field, field_validator

from device_farm.android import Intent
from device_farm.hierarchy import Screen
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.messaging import canonical_number, strip_text
from planner_runtime.harness.tools.storefront import by_id, has, money_value, open_screen, read_list, settle, tap, type_into

APP = app_named("Payments")

BRAND = "PayPal"  # the name the app shows, for hints
SHOWN = 30  # transactions one answer carries: the activity goes back years


def _home(ctx: ToolContext, package: str) -> Screen:
    main = Intent(action="android.intent.action.MAIN", categories=("android.intent.category.LAUNCHER",),
                  component=f"{package}/com.paypal.android.p2pmobile.startup.activities.StartupActivity")
    return open_screen(ctx, main, BRAND, has("balance_amount"))


class PaymentActivity(AppTool):
    name = "payment_activity"
    app = APP.name
    description = f"Read the PayPal balance and the activity, newest first, up to {SHOWN} (who, date, note, amount: negative = sent, positive = received)."

    def act(self, ctx: ToolContext, args: ToolArgs, package: str) -> ToolResult:
        screen = _home(ctx, package)
        balance = money_value(by_id(screen, "balance_amount")[0].text)  # read before the list scrolls it away
        read = read_list(ctx, screen, "activity_item_title", ("activity_item_subtitle", "activity_item_amount"), max_rows=SHOWN)
        activity = []
        for row in read.rows:
            sub, amount = row["activity_item_subtitle"].text, row["activity_item_amount"].text
            activity.append({"who": row["activity_item_title"].text, "date": sub.split(" · ")[0], "note": sub.partition(" · ")[2],
                             "amount": money_value(amount) * (-1 if amount.startswith("-") else 1)})
        result: dict[str, object] = {"balance": balance, "recent": activity}
        if (more := read.more("transactions, newest first")) is not None:
            result["more"] = more
        return ToolResult(result=result, observe=True)


class SendMoneyArgs(ToolArgs):
    to: str = Field(min_length=1, description="Recipient: name, @username, email or mobile number")
    amount: float = Field(gt=0, le=10000, description="Amount in USD, e.g. 25 or 12.50")
    note: str = Field(default="", max_length=200, description="What it's for (shown to the recipient)")

    @field_validator("to", "note", mode="before")
    @classmethod
    def strip_outer_space(cls, value: object) -> object:
        return strip_text(value)


class SendMoney(AppTool):
    name = "send_money"
    app = APP.name
    description = "Send money from the user's PayPal balance to a person (Send, then Send Now)."
    Args = SendMoneyArgs
    sensitive = Sensitivity.pay

    def target(self, ctx: ToolContext, args: SendMoneyArgs) -> dict[str, object]:
        # PayPal finds a person by name, @username, email or number whatever the case or spacing
        phone = not any(c.isalpha() or c == "@" for c in args.to)
        to = canonical_number(args.to) if phone else " ".join(args.to.casefold().split())
        return {"to": to, "amount": args.amount, "note": args.note}

    def act(self, ctx: ToolContext, args: SendMoneyArgs, package: str) -> ToolResult:
        screen = _home(ctx, package)
        tap(ctx, by_id(screen, "send_money_button")[0])
        screen = settle(ctx, BRAND, has("send_button"))
        for suffix, value in (("search_field", args.to), ("amount_edit_text", f"{args.amount:.2f}"), ("add_note", args.note)):
            if value:
                screen = type_into(ctx, screen, by_id(screen, suffix)[0], value)
        tap(ctx, by_id(screen, "send_button")[0])
        screen = settle(ctx, BRAND, lambda s: has("success_title")(s) or has("error_text")(s))
        if not by_id(screen, "success_title"):
            raise ToolFailure(ErrorCode.action_failed, f"PayPal refused: {by_id(screen, 'error_text')[0].text}")
        return ToolResult(result={"sent": args.amount, "to": args.to, "note": args.note}, observe=True)


TOOLS = (PaymentActivity, SendMoney)
