"""Email over Android's own mechanisms: ``send_email`` opens the mail app's composer with
``ACTION_SENDTO mailto:<address>`` and the ``EXTRA_SUBJECT``/``EXTRA_TEXT`` extras — the intent
every mail app handles — then taps its Send button. Nothing leaves until that tap, and the tap
happens only past the safety gate. A recipient given by name is looked up in Contacts' emails;
the repeat guard knows a send by the address it goes to (:meth:`SendEmail.target`).
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
from planner_runtime.harness.tools.messaging import strip_text
from planner_runtime.harness.tools.provider import sql_text

APP = app_named("Gmail")

SENDTO = "android.intent.action.SENDTO"
EMAILS_URI = "content://com.android.contacts/data/emails"


def address_for(ctx: ToolContext, to: str) -> str:
    """``to`` when it is an address, else the saved email of the contact named ``to``."""
    if "@" in to:
        return to.strip()
    rows = content_query(ctx.device, EMAILS_URI, projection=["display_name", "data1"], where=f"display_name={sql_text(to.strip())}")
    if not rows or not rows[0].get("data1"):
        raise ToolFailure(ErrorCode.element_not_found, f"no saved contact named {to!r} with an email address; give the address")
    return str(rows[0]["data1"])


def _is_send(e: Element) -> bool:
    return "tap" in e.actions and ((e.description or e.text).strip().lower() == "send" or e.resource_id.endswith(":id/send"))


class SendEmailArgs(ToolArgs):
    to: str = Field(min_length=1, description="Email address, or the name of a saved contact")
    subject: str = Field(default="", description="Subject line")
    body: str = Field(min_length=1, description="The email's text, exactly")

    @field_validator("to", "subject", "body", mode="before")
    @classmethod
    def strip_outer_space(cls, value: object) -> object:
        return strip_text(value)


class SendEmail(AppTool):
    name = "send_email"
    app = APP.name
    description = "Send an email with a subject and text (asks the user first)."
    Args = SendEmailArgs
    sensitive = Sensitivity.send

    def target(self, ctx: ToolContext, args: SendEmailArgs) -> dict[str, object]:
        # addresses are compared as mail servers treat them in practice: case does not matter
        return {"to": address_for(ctx, args.to).lower(), "subject": args.subject, "body": args.body}

    def act(self, ctx: ToolContext, args: SendEmailArgs, package: str) -> ToolResult:
        address = address_for(ctx, args.to)
        extras = {"android.intent.extra.SUBJECT": args.subject, "android.intent.extra.TEXT": args.body}
        try:
            start_activity(ctx.device, Intent(action=SENDTO, data="mailto:" + quote(address, safe="@.+-_"), extras=extras))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"no mail app took the email: {exc.output.strip()[:200]}") from exc
        screen = wait_for_screen(ctx, lambda s: any(_is_send(e) for e in s.elements))
        send = next((e for e in screen.elements if _is_send(e)), None)
        if send is None:
            raise ToolFailure(ErrorCode.element_not_found, "the composer opened but shows no Send button; nothing was sent")
        ctx.device.click(*send.bounds.center)
        ctx.observe()
        return ToolResult(result={"sent_to": address, "subject": args.subject}, observe=True)


TOOLS = (SendEmail,)
