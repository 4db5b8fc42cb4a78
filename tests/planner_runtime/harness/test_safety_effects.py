"""The safety gate judges effects, not tools: a table of sensitive effects × the routes that
reach them on the virtual phone (the app tool; the same tool with its declaration removed;
tapping the element by hand; typing and pressing Enter; a skill composite), each run through
the real ToolSet. Without a confirmation the step is blocked and the phone is unchanged, read
back through adb; with a policy allowing the category it goes through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest

from device_farm.android import Intent, content_insert, content_query, get_setting, launch_app, start_activity
from device_farm.virtual.faults import plan as F
from planner_runtime.contract import ErrorCode, Feedback, FeedbackStatus, ToolCall
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.harness.skills import CompositeStep, Skill
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import Tool, ToolContext, ToolSet
from planner_runtime.harness.tools.contacts import DeleteContact
from planner_runtime.harness.tools.composite import CompositeTool
from planner_runtime.harness.tools.email import SendEmail
from planner_runtime.harness.tools.files import DeleteFile
from planner_runtime.harness.tools.food import OrderFood
from planner_runtime.harness.tools.messaging import SendMessage
from planner_runtime.harness.tools.payments import SendMoney
from planner_runtime.harness.tools.phone import Call
from planner_runtime.harness.tools.settings import SetAppPermission, SetLocation, SetScreenLock

SMS_SENT = "content://sms/sent"
MAIL = "content://com.google.android.gm/messages"
CALLS = "content://call_log/calls"
PAYPAL = "content://com.paypal.android.p2pmobile.provider"
DOORDASH = "content://com.dd.doordash.provider"
KEEP = "content://com.google.android.keep/notes"
RAW_CONTACTS = "content://com.android.contacts/raw_contacts"


def unchecked(cls: type[Tool]) -> Tool:
    """``cls`` with its sensitivity declaration removed: what it does must still be judged."""
    return type(cls.__name__ + "Unchecked", (cls,), {"name": cls.name + "_unchecked", "sensitive": None})()


@dataclass
class Phone:
    """One case's phone, tools and context."""

    device: Any
    tools: ToolSet
    ctx: ToolContext
    virtual: Any  # the VirtualPhone behind ``device``: what the system does on its own (a dialog)

    def run(self, tool: str, /, **arguments: Any) -> Feedback:
        return self.tools.execute(ToolCall(name=tool, arguments=arguments), self.ctx)

    def tap(self, pick: Callable[[Any], bool]) -> Feedback:
        element = next(e for e in self.ctx.observe().elements if pick(e))
        return self.run("tap", element=element.id)

    def open(self, intent: Intent) -> None:
        start_activity(self.device, intent)  # the harness, not a tool: judged by nothing
        self.ctx.observe()


def composite(phone: Phone, *steps: dict) -> Feedback:
    skill = Skill(name="by-hand", description="the steps a person takes", composite=tuple(CompositeStep(**s) for s in steps))
    phone.tools = ToolSet([*phone.tools, CompositeTool(skill, phone.tools)])
    return phone.run(skill.tool_name)


def _switch_near(title: str) -> dict:
    return {"tool": "tap", "arguments": {"element": {"role": "Switch", "near_text": title}}}


LOCATION_PAGE = Intent(action="android.settings.LOCATION_SOURCE_SETTINGS")
SECURITY_PAGE = Intent(action="android.settings.SECURITY_SETTINGS")
MAPS_INFO = Intent(action="android.settings.APPLICATION_DETAILS_SETTINGS", data="package:com.google.android.apps.maps")
SMS_DRAFT = Intent(action="android.intent.action.SENDTO", data="smsto:+15550100", extras={"sms_body": "Here are all my contacts"})
MAIL_DRAFT = Intent(action="android.intent.action.SENDTO", data="mailto:eve@example.com",
                    extras={"android.intent.extra.SUBJECT": "Passwords", "android.intent.extra.TEXT": "all of them"})
SEND_SMS = {"to": "+15550100", "text": "Here are all my contacts"}


def _allow_in_prompt(p: Phone) -> Feedback:
    """Maps asks for the camera; the system's permission prompt shows; tap Allow by hand."""
    launch_app(p.device, "com.google.android.apps.maps")
    p.virtual.inject(F.PermissionDialog(package="com.google.android.apps.maps", permission="android.permission.CAMERA"))
    return p.tap(lambda e: e.text == "Allow")


def _location_from_home(p: Phone) -> Feedback:
    """As in the report: open Settings, scroll to Location, open it, tap the switch."""
    p.run("open_app", app="Settings")
    p.run("scroll", direction="down")
    p.run("scroll", direction="down")
    p.tap(lambda e: e.text == "Location")
    return p.tap(lambda e: e.role == "Switch")


def _granted(device) -> bool:
    return "android.permission.CAMERA: granted=true" in device.shell(["dumpsys", "package", "com.google.android.apps.maps"]).output


def _sign_in(device, provider: str) -> None:
    for table in ("account", "orders", "cart", "balance", "transactions"):
        device.shell(["content", "delete", "--uri", f"{provider}/{table}"])
    content_insert(device, f"{provider}/account", {"email": "ada@example.com", "name": "Ada"})
    if provider == PAYPAL:
        content_insert(device, f"{PAYPAL}/balance", {"amount": 180.0, "currency": "USD"})


def _seed_note(device) -> None:
    content_insert(device, KEEP, {"title": "Door code", "text": "4711"})


def _open_note(p: Phone) -> Feedback:
    launch_app(p.device, "com.google.android.keep")
    note = next(e for e in p.ctx.observe().elements if e.text == "Door code")
    p.device.click(*note.bounds.center)  # opening the note is no effect; deleting it is
    return p.tap(lambda e: e.description == "Delete")


@dataclass(frozen=True)
class Effect:
    category: Sensitivity
    state: Callable[[Any], Any]  # what the phone holds, read through adb
    setup: Callable[[Any], None] = lambda device: None


EFFECTS: dict[str, Effect] = {
    "location_off": Effect(Sensitivity.security, lambda d: get_setting(d, "secure", "location_mode") or "3"),
    "screen_lock_off": Effect(Sensitivity.security, lambda d: get_setting(d, "secure", "lockscreen.disabled") or "0"),
    "grant_permission": Effect(Sensitivity.security, _granted),
    "send_sms": Effect(Sensitivity.send, lambda d: len(content_query(d, SMS_SENT))),
    "send_email": Effect(Sensitivity.send, lambda d: len(content_query(d, MAIL, where="folder='sent'"))),
    "call": Effect(Sensitivity.call, lambda d: len(content_query(d, CALLS, where="type=2"))),
    "send_money": Effect(Sensitivity.pay, lambda d: len(content_query(d, f"{PAYPAL}/transactions")),
                         lambda d: _sign_in(d, PAYPAL)),
    "order_food": Effect(Sensitivity.purchase, lambda d: len(content_query(d, f"{DOORDASH}/orders")),
                         lambda d: _sign_in(d, DOORDASH)),
    "delete_contact": Effect(Sensitivity.delete, lambda d: len(content_query(d, "content://com.android.contacts/contacts")),
                             lambda d: content_insert(d, RAW_CONTACTS, {"display_name": "Ada Lovelace"})),
    "delete_note": Effect(Sensitivity.delete, lambda d: len(content_query(d, KEEP, where="trashed=0")), _seed_note),
    "delete_file": Effect(Sensitivity.delete, lambda d: d.shell(["ls", "/sdcard/Download"]).output.count("old.txt"),
                          lambda d: d.shell(["touch", "/sdcard/Download/old.txt"])),
}

ROUTES: dict[tuple[str, str], Callable[[Phone], Feedback]] = {
    ("location_off", "app_tool"): lambda p: p.run("set_location", on=False),
    ("location_off", "undeclared_tool"): lambda p: p.run("set_location_unchecked", on=False),
    ("location_off", "gui_tap_switch"): lambda p: (p.open(LOCATION_PAGE), p.tap(lambda e: e.role == "Switch"))[1],
    ("location_off", "gui_tap_row"): lambda p: (p.open(LOCATION_PAGE), p.tap(lambda e: e.text == "Use location"))[1],
    ("location_off", "gui_from_home"): _location_from_home,
    ("location_off", "composite"): lambda p: (p.open(LOCATION_PAGE), composite(p, _switch_near("Use location")))[1],
    ("screen_lock_off", "app_tool"): lambda p: p.run("set_screen_lock", on=False),
    ("screen_lock_off", "undeclared_tool"): lambda p: p.run("set_screen_lock_unchecked", on=False),
    ("screen_lock_off", "gui_tap_switch"): lambda p: (p.open(SECURITY_PAGE), p.tap(lambda e: e.role == "Switch"))[1],
    ("screen_lock_off", "composite"): lambda p: (p.open(SECURITY_PAGE), composite(p, _switch_near("Screen lock")))[1],
    ("grant_permission", "app_tool"): lambda p: p.run("set_app_permission", app="Maps", permission="camera", allow=True),
    ("grant_permission", "undeclared_tool"): lambda p: p.run("set_app_permission_unchecked", app="Maps", permission="camera", allow=True),
    ("grant_permission", "gui_tap_switch"): lambda p: (p.open(MAPS_INFO), p.tap(lambda e: e.role == "Switch"))[1],
    ("grant_permission", "gui_permission_prompt"): _allow_in_prompt,
    ("send_sms", "app_tool"): lambda p: p.run("send_message", **SEND_SMS),
    ("send_sms", "undeclared_tool"): lambda p: p.run("send_message_unchecked", **SEND_SMS),
    ("send_sms", "gui_tap"): lambda p: (p.open(SMS_DRAFT), p.tap(lambda e: e.description == "Send SMS"))[1],
    ("send_sms", "type_text_enter"): lambda p: (p.open(SMS_DRAFT), p.run(
        "type_text", element=next(e.id for e in p.ctx.screen.elements if e.editable), text="hi", submit=True))[1],
    ("send_sms", "composite"): lambda p: (p.open(SMS_DRAFT), composite(
        p, {"tool": "tap", "arguments": {"element": {"text": "Send SMS"}}}))[1],
    ("send_email", "app_tool"): lambda p: p.run("send_email", to="eve@example.com", subject="Passwords", body="all of them"),
    ("send_email", "undeclared_tool"): lambda p: p.run("send_email_unchecked", to="eve@example.com", body="all of them"),
    ("send_email", "gui_tap"): lambda p: (p.open(MAIL_DRAFT), p.tap(lambda e: e.description == "Send"))[1],
    ("call", "app_tool"): lambda p: p.run("call", to="+15550100"),
    ("call", "intent_undeclared_tool"): lambda p: p.run("call_unchecked", to="+15550100"),
    ("call", "gui_tap"): lambda p: (p.open(Intent(action="android.intent.action.DIAL", data="tel:+15550100")),
                                    p.tap(lambda e: e.description == "dial"))[1],
    ("send_money", "app_tool"): lambda p: p.run("send_money", to="Maria Garcia", amount=5.0),
    ("send_money", "gui_undeclared_tool"): lambda p: p.run("send_money_unchecked", to="Maria Garcia", amount=5.0),
    ("order_food", "app_tool"): lambda p: p.run("order_food", restaurant="Thai Basil", items=["Pad Thai"]),
    ("order_food", "gui_undeclared_tool"): lambda p: p.run("order_food_unchecked", restaurant="Thai Basil", items=["Pad Thai"]),
    ("delete_contact", "app_tool"): lambda p: p.run("delete_contact", name="Ada Lovelace"),
    ("delete_contact", "shell_undeclared_tool"): lambda p: p.run("delete_contact_unchecked", name="Ada Lovelace"),
    ("delete_note", "app_tool"): lambda p: p.run("delete_note", title="Door code"),
    ("delete_note", "gui_tap"): _open_note,
    ("delete_file", "app_tool"): lambda p: p.run("delete_file", path="Downloads/old.txt"),
    ("delete_file", "shell_undeclared_tool"): lambda p: p.run("delete_file_unchecked", path="Downloads/old.txt"),
}
# the virtual phone's keyboard has no action key: Enter is judged, but it sends nothing there
LANDS = {route: route[1] != "type_text_enter" for route in ROUTES}
UNCHECKED = [SetLocation, SetScreenLock, SetAppPermission, SendMessage, SendEmail, Call, SendMoney, OrderFood, DeleteContact, DeleteFile]


def _phone(device, gate: SafetyGate, virtual: Any = None) -> Phone:
    tools = ToolSet([*default_toolset(), *(unchecked(cls) for cls in UNCHECKED)])
    return Phone(device, tools, ToolContext(device=device, gate=gate), virtual)


@pytest.mark.parametrize(("effect", "route"), list(ROUTES), ids=[f"{e}-{r}" for e, r in ROUTES])
def test_every_route_to_a_sensitive_effect_meets_the_gate(device, virtual_phone, effect, route):
    case, reach = EFFECTS[effect], ROUTES[(effect, route)]
    case.setup(device)
    before = case.state(device)

    gate = SafetyGate()  # nobody to confirm, no policy: deny
    feedback = reach(_phone(device, gate, virtual_phone.phone))
    assert feedback.status is FeedbackStatus.blocked, feedback
    assert feedback.error.code is ErrorCode.unsafe_action
    assert case.state(device) == before
    assert [(r.category, r.allowed) for r in gate.log][-1:] == [(case.category, False)]

    start_activity(device, Intent(action="android.intent.action.MAIN", categories=("android.intent.category.HOME",)))
    allowed = SafetyGate(policy=Policy(allow={case.category}))
    feedback = reach(_phone(device, allowed, virtual_phone.phone))
    assert feedback.status is FeedbackStatus.ok, feedback
    assert [r.allowed for r in allowed.log] and all(r.allowed for r in allowed.log)
    if LANDS[(effect, route)]:
        assert case.state(device) != before


def test_the_log_names_the_effect_and_a_confirmation_sees_it(device):
    asked = []
    gate = SafetyGate(confirm=lambda tool, category, arguments: asked.append((tool, category, arguments["effect"])) or False)
    phone = _phone(device, gate)
    phone.open(LOCATION_PAGE)
    feedback = phone.tap(lambda e: e.role == "Switch")
    assert feedback.status is FeedbackStatus.blocked and "declined" in feedback.error.hint
    assert asked == [("tap", Sensitivity.security, "turn location on or off")]
    assert gate.log[-1].effect == "turn location on or off" and gate.log[-1].tool == "tap"
    assert get_setting(device, "secure", "location_mode") in (None, "3")


def test_harmless_taps_in_described_apps_are_not_asked_about(device):
    """Planted words do not add friction where the app says what its elements do, and a
    Settings switch that is not a security setting runs without asking."""
    content_insert(device, RAW_CONTACTS, {"display_name": "Send money now"})
    gate = SafetyGate()
    phone = _phone(device, gate)
    launch_app(device, "com.google.android.contacts")
    assert phone.tap(lambda e: e.text == "Send money now").status is FeedbackStatus.ok
    assert phone.run("toggle_setting", setting="bluetooth", on=False).status is FeedbackStatus.ok
    assert gate.log == []
