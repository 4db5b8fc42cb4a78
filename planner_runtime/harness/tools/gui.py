"""GUI tools: read the screen and act on its elements by id, like a person looking at it.

Element ids come from the last :class:`~device_farm.hierarchy.Screen` the planner was shown;
acting on an id that is not on that screen is a planner mistake answered with feedback. What a
tap or an Enter would do (send, pay, turn location off...) is judged by the safety gate on the
device the tools act through, as for every other tool.
"""

from __future__ import annotations

import time
from typing import Callable, Literal

from pydantic import Field

from device_farm.android import launch_app
from device_farm.hierarchy import Element, Screen
from device_farm.adb.u2rpc import ui_selector
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import APPS, resolve_package
from planner_runtime.harness.tools import NoArgs, Tool, ToolArgs, ToolContext, ToolFailure, ToolResult


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
        ctx.device.click(*element.bounds.center)
        ctx.observe()
        return ToolResult(result={"tapped": element.describe()}, observe=True)


class TypeTextArgs(ToolArgs):
    element: int = Field(ge=0, description="Id of a text field on the current screen")
    text: str = Field(description="The text to enter; it replaces what the field holds")
    submit: bool = Field(default=False, description="Press Enter afterwards, as the keyboard's action key (search, go, send)")


class TypeText(Tool):
    name = "type_text"
    description = "Type text into a text field of the current screen; submit presses Enter after it."
    Args = TypeTextArgs

    def run(self, ctx: ToolContext, args: TypeTextArgs) -> ToolResult:
        screen = ctx.screen or ctx.observe()
        element = element_on_screen(ctx, args.element)
        if not element.editable:
            raise ToolFailure(ErrorCode.invalid_arguments, f"element [{element.id}] is a {element.role}, not a text field")
        ctx.device.set_text(selector_for(screen, element), args.text)
        ctx.observe()
        if args.submit:
            ctx.device.press("enter")
            ctx.observe()
        return ToolResult(result={"typed": args.text, "submitted": args.submit}, observe=True)


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


class LongPressArgs(ToolArgs):
    element: int = Field(ge=0, description="Element id from the current screen")


class LongPress(Tool):
    name = "long_press"
    description = "Touch and hold an element of the current screen (opens context menus, starts selection)."
    Args = LongPressArgs

    def run(self, ctx: ToolContext, args: LongPressArgs) -> ToolResult:
        element = element_on_screen(ctx, args.element)
        ctx.device.long_press(*element.bounds.center)
        ctx.observe()
        return ToolResult(result={"long_pressed": element.describe()}, observe=True)


class ScrollArgs(ToolArgs):
    direction: Literal["down", "up"] = Field(description="down shows what is further down the list; up goes back")
    element: int | None = Field(default=None, ge=0, description="A scrollable element to scroll (default: the first one)")


class Scroll(Tool):
    name = "scroll"
    description = "Scroll a list to see more of it."
    Args = ScrollArgs

    def run(self, ctx: ToolContext, args: ScrollArgs) -> ToolResult:
        screen = ctx.screen or ctx.observe()
        if args.element is not None:
            target = element_on_screen(ctx, args.element)
        else:
            target = next((e for e in screen.elements if e.scrollable), None)
            if target is None:
                raise ToolFailure(ErrorCode.element_not_found, "nothing on this screen scrolls")
        b = target.bounds
        x, top, bottom = b.center[0], b.top + (b.bottom - b.top) // 4, b.bottom - (b.bottom - b.top) // 4
        start, end = (bottom, top) if args.direction == "down" else (top, bottom)  # the finger moves against the content
        ctx.device.swipe(x, start, x, end, 0.3)
        ctx.observe()
        return ToolResult(result={"scrolled": args.direction}, observe=True)


class SwipeArgs(ToolArgs):
    direction: Literal["left", "right", "up", "down"] = Field(description="Which way the finger moves")


class Swipe(Tool):
    name = "swipe"
    description = "Swipe across the whole screen: left/right turns pages, down from the top opens the notifications, up goes back."
    Args = SwipeArgs

    def run(self, ctx: ToolContext, args: SwipeArgs) -> ToolResult:
        info = ctx.device.info()
        w, h = info.width, info.height
        moves = {
            "left": (w * 4 // 5, h // 2, w // 5, h // 2),
            "right": (w // 5, h // 2, w * 4 // 5, h // 2),
            "up": (w // 2, h * 2 // 3, w // 2, 10),
            "down": (w // 2, 10, w // 2, h * 2 // 3),  # from the top edge, as a person pulls down the shade
        }
        ctx.device.swipe(*moves[args.direction], 0.25)
        ctx.observe()
        return ToolResult(result={"swiped": args.direction}, observe=True)


TOOLS = (OpenApp, ReadScreen, Tap, LongPress, TypeText, Scroll, Swipe, Back, Home)
