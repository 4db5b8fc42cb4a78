"""Text-message tools over Android's own mechanisms.

``send_message`` opens the messaging app with ``ACTION_SENDTO smsto:<number>`` and the text in
``sms_body`` — the intent every SMS app handles — then taps its Send button, so nothing is sent
until that tap (and the tap happens only past the safety gate). ``read_messages`` reads
Telephony's ``content://sms/inbox`` a page at a time. A recipient given by name is looked up in
Contacts first; the repeat guard knows a send by the number it goes to (:meth:`SendMessage.target`).
"""

from __future__ import annotations

from urllib.parse import quote

from pydantic import Field, field_validator

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Element
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen
from planner_runtime.harness.tools.provider import page, sql_text

APP = app_named("Messages")

SENDTO = "android.intent.action.SENDTO"
SMS_INBOX = "content://sms/inbox"
PHONES_URI = "content://com.android.contacts/data/phones"


def number_for(ctx: ToolContext, to: str) -> str:
    """``to`` itself when it is a number, else the saved number of the contact named ``to``."""
    if sum(c.isdigit() for c in to) >= 3:
        return to.strip()
    rows = content_query(ctx.device, PHONES_URI, projection=["display_name", "data1"],
                         where=f"display_name={sql_text(to.strip())}")
    if not rows or not rows[0].get("data1"):
        raise ToolFailure(ErrorCode.element_not_found, f"no saved contact named {to!r} with a phone number; give the number")
    return str(rows[0]["data1"])


def canonical_number(number: str) -> str:
    """The number as a dialler reads it, for telling numbers apart: separators (spaces, dashes,
    dots, brackets) dropped, so "+1 555 0123" and "+1-555-0123" are one number."""
    return "".join(c for c in number if c.isdigit() or c in "+*#")


def strip_text(value: object) -> object:
    """Outer whitespace is never meant: a recipient or a message is the same without it."""
    return value.strip() if isinstance(value, str) else value


def _is_send_button(e: Element) -> bool:
    label = (e.description or e.text).strip().lower()
    return "tap" in e.actions and (label.startswith("send") or e.resource_id.endswith("send_message_button_icon"))


class SendMessageArgs(ToolArgs):
    to: str = Field(min_length=1, description="Phone number, or the name of a saved contact")
    text: str = Field(min_length=1, description="The message to send, exactly")

    @field_validator("to", "text", mode="before")
    @classmethod
    def strip_outer_space(cls, value: object) -> object:
        return strip_text(value)


class SendMessage(AppTool):
    name = "send_message"
    app = APP.name
    description = "Send a text message (SMS) to a phone number or a saved contact (asks the user first)."
    Args = SendMessageArgs
    sensitive = Sensitivity.send

    def target(self, ctx: ToolContext, args: SendMessageArgs) -> dict[str, object]:
        return {"to": canonical_number(number_for(ctx, args.to)), "text": args.text}

    def act(self, ctx: ToolContext, args: SendMessageArgs, package: str) -> ToolResult:
        number = number_for(ctx, args.to)
        intent = Intent(action=SENDTO, data="smsto:" + quote(number, safe="+"), extras={"sms_body": args.text})
        try:
            start_activity(ctx.device, intent)
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"no messaging app took the message: {exc.output.strip()[:200]}") from exc
        screen = wait_for_screen(ctx, lambda s: any(_is_send_button(e) for e in s.elements))
        send = next((e for e in screen.elements if _is_send_button(e)), None)
        if send is None:
            raise ToolFailure(ErrorCode.element_not_found, "the conversation opened but shows no Send button; nothing was sent")
        ctx.device.click(*send.bounds.center)
        ctx.observe()
        return ToolResult(result={"sent_to": number, "text": args.text}, observe=True)


class ReadMessagesArgs(ToolArgs):
    sender: str = Field(default="", description="Only messages from this number or saved contact; empty for all")
    limit: int = Field(default=5, ge=1, le=20, description="How many messages, newest first")
    offset: int = Field(default=0, ge=0, description="Skip this many of the newest first, to read older ones")


class ReadMessages(AppTool):
    name = "read_messages"
    app = APP.name
    description = "Read the received text messages (sender, text), newest first (offset reads older ones)."
    Args = ReadMessagesArgs

    def act(self, ctx: ToolContext, args: ReadMessagesArgs, package: str) -> ToolResult:
        where = f"address={sql_text(number_for(ctx, args.sender))}" if args.sender else None
        # the body last: Android's row format is only ambiguous for a value followed by another column
        rows = content_query(ctx.device, SMS_INBOX, projection=["address", "date", "body"], where=where, sort="date DESC, _id DESC")
        shown, info = page(rows, args.offset, args.limit, "messages")
        return ToolResult(result={"messages": [{"from": r.get("address"), "text": r.get("body")} for r in shown], **info})


TOOLS = (SendMessage, ReadMessages)
