"""Phone tools over Android's own mechanisms.

``call`` starts ``ACTION_CALL tel:<number>``, which places the call at once (adb's shell holds
CALL_PHONE, so it works on a real phone too); it is sensitive and runs only past the safety
gate. ``recent_calls`` reads ``content://call_log/calls`` a page at a time. A callee given by
name is looked up in Contacts first; the repeat guard knows a call by the number it dials
(:meth:`Call.target`), however that number was written.
"""

from __future__ import annotations

from urllib.parse import quote

from pydantic import Field, field_validator

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.messaging import canonical_number, number_for, strip_text
from planner_runtime.harness.tools.provider import page

APP = app_named("Phone")

ACTION_CALL = "android.intent.action.CALL"
CALLS_URI = "content://call_log/calls"
CALL_TYPES = {"1": "incoming", "2": "outgoing", "3": "missed", "4": "voicemail", "5": "rejected", "6": "blocked"}


class CallArgs(ToolArgs):
    to: str = Field(min_length=1, description="Phone number, or the name of a saved contact")

    @field_validator("to", mode="before")
    @classmethod
    def strip_outer_space(cls, value: object) -> object:
        return strip_text(value)


class Call(AppTool):
    name = "call"
    app = APP.name
    description = "Place a phone call to a number or a saved contact (asks the user first)."
    Args = CallArgs
    sensitive = Sensitivity.call

    def target(self, ctx: ToolContext, args: CallArgs) -> dict[str, object]:
        return {"to": canonical_number(number_for(ctx, args.to))}

    def act(self, ctx: ToolContext, args: CallArgs, package: str) -> ToolResult:
        number = number_for(ctx, args.to)
        try:
            start_activity(ctx.device, Intent(action=ACTION_CALL, data="tel:" + quote(number, safe="+*#")))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"the call was not placed: {exc.output.strip()[:200]}") from exc
        ctx.observe()
        return ToolResult(result={"calling": number}, observe=True)


class RecentCallsArgs(ToolArgs):
    kind: str = Field(default="", description="Only calls of this kind: incoming, outgoing or missed; empty for all")
    limit: int = Field(default=5, ge=1, le=20, description="How many calls, newest first")
    offset: int = Field(default=0, ge=0, description="Skip this many of the newest first, to read older ones")


class RecentCalls(AppTool):
    name = "recent_calls"
    app = APP.name
    description = "Read the call log, newest first: number, saved name, and whether incoming, outgoing or missed (offset reads older ones)."
    Args = RecentCallsArgs

    def act(self, ctx: ToolContext, args: RecentCallsArgs, package: str) -> ToolResult:
        codes = {v: k for k, v in CALL_TYPES.items()}
        if args.kind and args.kind.lower() not in codes:
            raise ToolFailure(ErrorCode.invalid_arguments, "kind must be incoming, outgoing, missed or empty")
        where = f"type={codes[args.kind.lower()]}" if args.kind else None
        rows = content_query(ctx.device, CALLS_URI, projection=["number", "name", "type", "duration"], where=where,
                             sort="date DESC, _id DESC")
        shown, info = page(rows, args.offset, args.limit, "calls")
        calls = [{"number": r.get("number"), "name": r.get("name") or "", "kind": CALL_TYPES.get(str(r.get("type")), "call"),
                  "seconds": int(r.get("duration") or 0)} for r in shown]
        return ToolResult(result={"calls": calls, **info})


TOOLS = (Call, RecentCalls)
