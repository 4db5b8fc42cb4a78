"""Helpers for the commerce app tools (shopping, food, travel, payments): open an app screen
through an intent, wait for what it should show, find elements by resource-id or text, tap
them, and stop with a clear failure when the app is signed out.

These apps keep their state behind the account, so tools drive their UI the way a person
would after a deep link, and read results from the screen, not from a private database.
"""

from __future__ import annotations

import time
from typing import Callable

from device_farm.android import Intent, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Element, Screen
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.tools import ToolContext, ToolFailure
from planner_runtime.harness.tools.gui import wait_for_screen


def signed_out(screen: Screen) -> bool:
    """The sign-in screen: a password field is showing."""
    return any(e.editable and "password" in e.resource_id.lower() for e in screen.elements)


def open_screen(ctx: ToolContext, intent: Intent, app: str, ready: Callable[[Screen], bool],
                timeout: float = 5.0) -> Screen:
    """Start ``intent`` and wait until ``ready``; a sign-in screen or a timeout is a failure."""
    try:
        start_activity(ctx.device, intent)
    except ShellCommandError as exc:
        raise ToolFailure(ErrorCode.action_failed, f"{app} did not open: {exc.output.strip()[:200]}") from exc
    return settle(ctx, app, ready, timeout)


def settle(ctx: ToolContext, app: str, ready: Callable[[Screen], bool], timeout: float = 5.0) -> Screen:
    screen = wait_for_screen(ctx, lambda s: ready(s) or signed_out(s), timeout)
    if signed_out(screen):
        raise ToolFailure(ErrorCode.action_failed,
                          f"{app} shows its sign-in screen: the user must sign in first (ask them, or finish saying so)")
    if not ready(screen):
        raise ToolFailure(ErrorCode.timeout, f"{app} did not show the expected screen in {timeout:g} s")
    return screen


def by_id(screen: Screen, suffix: str) -> list[Element]:
    """Elements whose resource-id ends with ``:id/<suffix>``, top to bottom."""
    return [e for e in screen.elements if e.resource_id.endswith(f":id/{suffix}")]


def by_text(screen: Screen, text: str, exact: bool = False) -> list[Element]:
    want = text.strip().lower()
    return [e for e in screen.elements
            if (e.text.strip().lower() == want if exact else want in e.text.lower())]


def has(suffix: str) -> Callable[[Screen], bool]:
    return lambda s: bool(by_id(s, suffix))


def tap(ctx: ToolContext, element: Element) -> None:
    ctx.device.click(*element.bounds.center)
    time.sleep(0.05)


def tap_id(ctx: ToolContext, screen: Screen, suffix: str, what: str) -> None:
    found = by_id(screen, suffix)
    if not found:
        raise ToolFailure(ErrorCode.element_not_found, f"no {what} on the screen")
    tap(ctx, found[0])


def pick(elements: list[Element], wanted: str, what: str) -> Element:
    """The element whose text matches ``wanted`` best: exact, else the first containing every word."""
    words = wanted.lower().split()
    exact = [e for e in elements if e.text.strip().lower() == wanted.strip().lower()]
    close = exact or [e for e in elements if all(w in e.text.lower() for w in words)]
    if not close:
        shown = "; ".join(e.text for e in elements[:8]) or "nothing"
        raise ToolFailure(ErrorCode.element_not_found, f"no {what} matching {wanted!r}; the screen lists: {shown}")
    return close[0]


def money_value(text: str) -> float:
    digits = "".join(c for c in text if c.isdigit() or c == ".")
    return float(digits) if digits else 0.0


def type_into(ctx: ToolContext, screen: Screen, element: Element, text: str) -> Screen:
    """Replace a field's text, as a person typing would, and read the screen again."""
    from planner_runtime.harness.tools.gui import selector_for

    ctx.device.set_text(selector_for(screen, element), text)
    return ctx.observe()
