"""GUI tools: read the screen and act on its elements by id, like a person looking at it.

Element ids come from the last :class:`~device_farm.hierarchy.Screen` the planner was shown;
acting on an id that is not on that screen is a planner mistake answered with feedback.
"""

from __future__ import annotations

import time
from typing import Callable

from pydantic import Field

from device_farm.android import launch_app
from device_farm.hierarchy import Element, Screen
from device_farm.u2rpc import ui_selector
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import APPS, resolve_package
from planner_runtime.harness.safety import button_sensitivity
from planner_runtime.harness.tools import Blocked, NoArgs, Tool, ToolArgs, ToolContext, ToolFailure, ToolResult


def element_on_screen(ctx: ToolContext, element_id: int) -> Element:
    screen = ctx.screen or ctx.observe()
    element = screen.element(element_id)
    if element is None:
        raise ToolFailure(
            ErrorCode.element_not_found,
            f"no element [{element_id}] on the current screen ({len(screen.elements)} elements); call read_screen",
        )
    return element


def selector_for(screen: Screen, element: Element) -> dict:
    """A uiautomator selector that picks ``element`` out of ``screen``."""
    if element.resource_id:
        same = [e for e in screen.elements if e.resource_id == element.resource_id]
        return ui_selector(resourceId=element.resource_id, instance=same.index(element))
    same = [e for e in screen.elements if e.class_name == element.class_name]
    return ui_selector(className=element.class_name, instance=same.index(element))


def wait_for_screen(ctx: ToolContext, found: Callable[[Screen], bool], timeout: float = 5.0) -> Screen:
    """Observe until ``found(screen)`` or the timeout; returns the last screen either way."""
    deadline = time.monotonic() + timeout
    screen = ctx.observe()
    while not found(screen) and time.monotonic() < deadline:
        time.sleep(0.2)
        screen = ctx.observe()
    return screen


class ReadScreen(Tool):
    name = "read_screen"
    description = "Read the elements on the phone's screen. Each line is [id] role \"text\" and what you can do with it."

    def run(self, ctx: ToolContext, args: NoArgs) -> ToolResult:
        ctx.observe()
        return ToolResult(result="screen below", observe=True)


class OpenAppArgs(ToolArgs):
    app: str = Field(description="App name such as 'Clock' or 'Contacts', or a package name")


class OpenApp(Tool):
    name = "open_app"
    description = "Open an app on the phone by name."
    Args = OpenAppArgs

    def run(self, ctx: ToolContext, args: OpenAppArgs) -> ToolResult:
        package = resolve_package(args.app, ctx.installed())
        if package is None:
            known = ", ".join(a.name for a in APPS)
            raise ToolFailure(ErrorCode.app_not_installed, f"no installed app called {args.app!r}; known apps: {known}")
        launch_app(ctx.device, package)
        wait_for_screen(ctx, lambda s: s.package == package, timeout=3.0)
        return ToolResult(result={"package": package}, observe=True)


class TapArgs(ToolArgs):
    element: int = Field(ge=0, description="Element id from the current screen")


class Tap(Tool):
    name = "tap"
    description = "Tap an element of the current screen by its id."
    Args = TapArgs

    def run(self, ctx: ToolContext, args: TapArgs) -> ToolResult:
        element = element_on_screen(ctx, args.element)
        category = button_sensitivity(element.text or element.description, element.resource_id)
        if category is not None:  # pressing Send or Pay by hand goes through the same gate as send_message
            decision = ctx.gate.decide(self.name, category, {"element": element.describe()})
            if not decision.allowed:
                raise Blocked(f"tapping [{element.id}] would {category.value}; not done: {decision.reason}")
        ctx.device.click(*element.bounds.center)
        ctx.observe()
        return ToolResult(result={"tapped": element.describe()}, observe=True)


class TypeTextArgs(ToolArgs):
    element: int = Field(ge=0, description="Id of a text field on the current screen")
    text: str = Field(description="The text to enter; it replaces what the field holds")


class TypeText(Tool):
    name = "type_text"
    description = "Type text into a text field of the current screen."
    Args = TypeTextArgs

    def run(self, ctx: ToolContext, args: TypeTextArgs) -> ToolResult:
        screen = ctx.screen or ctx.observe()
        element = element_on_screen(ctx, args.element)
        if not element.editable:
            raise ToolFailure(ErrorCode.invalid_arguments, f"element [{element.id}] is a {element.role}, not a text field")
        ctx.device.set_text(selector_for(screen, element), args.text)
        ctx.observe()
        return ToolResult(result={"typed": args.text}, observe=True)


class _KeyTool(Tool):
    """Press one system key, then look at the screen."""

    key: str

    def run(self, ctx: ToolContext, args: NoArgs) -> ToolResult:
        ctx.device.press(self.key)
        ctx.observe()
        return ToolResult(observe=True)


class Back(_KeyTool):
    name = "back"
    description = "Press the Back button."
    key = "back"


class Home(_KeyTool):
    name = "home"
    description = "Press the Home button."
    key = "home"
