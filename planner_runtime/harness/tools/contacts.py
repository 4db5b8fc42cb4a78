"""Contacts: saving a contact through ``ContactsContract.Intents.Insert`` and the editor's Save
button, deleting one through the contacts provider — Android's own mechanisms, so both work on a
real phone and on the virtual one alike."""

from __future__ import annotations

from pydantic import Field

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Element
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen
from planner_runtime.harness.tools.provider import sql_text

APP = app_named("Contacts")
CONTACT_INSERT = "android.intent.action.INSERT"
CONTACT_DIR_TYPE = "vnd.android.cursor.dir/contact"
CONTACTS_URI = "content://com.android.contacts/contacts"
RAW_CONTACTS_URI = "content://com.android.contacts/raw_contacts"


class AddContactArgs(ToolArgs):
    name: str = Field(min_length=1, description="The contact's full name")
    phone: str = Field(default="", description="Phone number")
    email: str = Field(default="", description="Email address")


def _is_save_button(e: Element) -> bool:
    label = (e.text or e.description).strip().lower()
    return ("tap" in e.actions) and (label == "save" or e.resource_id.endswith("save_button"))


class AddContact(AppTool):
    name = "add_contact"
    app = APP.name
    description = "Save a new contact with a name and optionally a phone number and email."
    Args = AddContactArgs

    def act(self, ctx: ToolContext, args: AddContactArgs, package: str) -> ToolResult:
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


class DeleteContact(AppTool):
    name = "delete_contact"
    app = APP.name
    description = "Delete a saved contact by name (asks the user first)."
    Args = DeleteContactArgs
    sensitive = Sensitivity.delete

    def act(self, ctx: ToolContext, args: DeleteContactArgs, package: str) -> ToolResult:
        where = f"display_name={sql_text(args.name)}"
        if not content_query(ctx.device, CONTACTS_URI, where=where):
            raise ToolFailure(ErrorCode.element_not_found, f"no contact named {args.name!r}")
        result = ctx.device.shell(["content", "delete", "--uri", RAW_CONTACTS_URI, "--where", where])
        if not result.ok:
            raise ToolFailure(ErrorCode.action_failed, f"the contacts provider refused: {result.output.strip()[:200]}")
        return ToolResult(result={"deleted": args.name})


TOOLS = (AddContact, DeleteContact)
