"""App tools: whole actions done through Android's own mechanisms (intents, then the UI).

``set_alarm`` uses ``AlarmClock.ACTION_SET_ALARM`` — the intent any clock app handles — and
``add_contact`` uses ``ContactsContract.Intents.Insert`` and then taps the editor's Save button,
so both work on a real phone with those apps and on the virtual phone alike.
"""

from __future__ import annotations

from pydantic import Field

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Element
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import resolve_package
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen

SET_ALARM = "android.intent.action.SET_ALARM"
ALARM_EXTRA = "android.intent.extra.alarm."
CONTACT_INSERT = "android.intent.action.INSERT"
CONTACT_DIR_TYPE = "vnd.android.cursor.dir/contact"
CONTACTS_URI = "content://com.android.contacts/contacts"
RAW_CONTACTS_URI = "content://com.android.contacts/raw_contacts"


def _require_app(ctx: ToolContext, name: str) -> str:
    package = resolve_package(name, ctx.installed())
    if package is None:
        raise ToolFailure(ErrorCode.app_not_installed, f"no {name} app is installed on this phone")
    return package


class SetAlarmArgs(ToolArgs):
    hour: int = Field(ge=0, le=23, description="Hour on the 24-hour clock, e.g. 7 for 7 AM, 19 for 7 PM")
    minutes: int = Field(ge=0, le=59, description="Minutes, 0-59")
    label: str = Field(default="", description="Optional alarm label")


class SetAlarm(Tool):
    name = "set_alarm"
    app = "Clock"
    description = "Create an alarm in the Clock app at the given time (24-hour clock)."
    Args = SetAlarmArgs

    def run(self, ctx: ToolContext, args: SetAlarmArgs) -> ToolResult:
        package = _require_app(ctx, "Clock")
        extras: dict[str, object] = {ALARM_EXTRA + "HOUR": args.hour, ALARM_EXTRA + "MINUTES": args.minutes}
        if args.label:
            extras[ALARM_EXTRA + "MESSAGE"] = args.label
        extras[ALARM_EXTRA + "SKIP_UI"] = True
        try:
            start_activity(ctx.device, Intent(action=SET_ALARM, extras=extras, component=None))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"{package} refused the alarm: {exc.output.strip()[:200]}") from exc
        return ToolResult(result={"hour": args.hour, "minutes": args.minutes, "label": args.label})


class AddContactArgs(ToolArgs):
    name: str = Field(min_length=1, description="The contact's full name")
    phone: str = Field(default="", description="Phone number")
    email: str = Field(default="", description="Email address")


def _is_save_button(e: Element) -> bool:
    label = (e.text or e.description).strip().lower()
    return ("tap" in e.actions) and (label == "save" or e.resource_id.endswith("save_button"))


class AddContact(Tool):
    name = "add_contact"
    app = "Contacts"
    description = "Save a new contact with a name and optionally a phone number and email."
    Args = AddContactArgs

    def run(self, ctx: ToolContext, args: AddContactArgs) -> ToolResult:
        _require_app(ctx, "Contacts")
        extras = {"name": args.name}
        if args.phone:
            extras["phone"] = args.phone
        if args.email:
            extras["email"] = args.email
        try:
            start_activity(ctx.device, Intent(action=CONTACT_INSERT, mime_type=CONTACT_DIR_TYPE, extras=extras))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"the contacts editor did not open: {exc.output.strip()[:200]}") from exc
        screen = wait_for_screen(ctx, lambda s: any(_is_save_button(e) for e in s.elements))
        save = next((e for e in screen.elements if _is_save_button(e)), None)
        if save is None:
            raise ToolFailure(ErrorCode.element_not_found, "the contact editor opened but shows no Save button")
        ctx.device.click(*save.bounds.center)
        ctx.observe()
        return ToolResult(result={"saved": args.name, "phone": args.phone, "email": args.email}, observe=True)


class DeleteContactArgs(ToolArgs):
    name: str = Field(min_length=1, description="The contact's full name as saved")


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class DeleteContact(Tool):
    name = "delete_contact"
    app = "Contacts"
    description = "Delete a saved contact by name (asks the user first)."
    Args = DeleteContactArgs
    sensitive = Sensitivity.delete

    def run(self, ctx: ToolContext, args: DeleteContactArgs) -> ToolResult:
        _require_app(ctx, "Contacts")
        where = f"display_name={_sql_text(args.name)}"
        if not content_query(ctx.device, CONTACTS_URI, where=where):
            raise ToolFailure(ErrorCode.element_not_found, f"no contact named {args.name!r}")
        result = ctx.device.shell(["content", "delete", "--uri", RAW_CONTACTS_URI, "--where", where])
        if not result.ok:
            raise ToolFailure(ErrorCode.action_failed, f"the contacts provider refused: {result.output.strip()[:200]}")
        return ToolResult(result={"deleted": args.name})


class FinishArgs(ToolArgs):
    answer: str = Field(default="", description="What was done, or the answer to the user's question")


class Finish(Tool):
    name = "finish"
    description = "End the task when the goal is reached (or cannot be), with a short answer for the user."
    Args = FinishArgs
    terminal = True

    def run(self, ctx: ToolContext, args: FinishArgs) -> ToolResult:
        return ToolResult(result={"answer": args.answer})
