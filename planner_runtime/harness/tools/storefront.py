"""Helpers for the commerce app tools (shopping, food, travel, payments): open an app screen
through an intent, wait for what it should show, find elements by resource-id or text, tap
them, read a list to its end, and stop with a clear failure when the app is signed out.

These apps keep their state behind the account, so tools drive their UI the way a person
would after a deep link, and read results from the screen, not from a private database. A list
longer than the screen is scrolled through, as a person would, so a result holds every row or
says where it stopped (:func:`read_list`, :func:`find_in_list`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

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
        shown = "; ".join(e.text for e in elements[:12]) + (f" and {len(elements) - 12} more" if len(elements) > 12 else "")
        raise ToolFailure(ErrorCode.element_not_found, f"no {what} matching {wanted!r}; the list holds: {shown or 'nothing'}")
    return close[0]


def money_value(text: str) -> float:
    digits = "".join(c for c in text if c.isdigit() or c == ".")
    return float(digits) if digits else 0.0


def type_into(ctx: ToolContext, screen: Screen, element: Element, text: str) -> Screen:
    """Replace a field's text, as a person typing would, and read the screen again."""
    from planner_runtime.harness.tools.gui import selector_for

    ctx.device.set_text(selector_for(screen, element), text)
    return ctx.observe()


MAX_SCROLLS = 30  # swipes one list read may take (half a list each): the bound on a list with no end
Row = dict[str, Element]  # one list row: its elements by resource-id suffix


@dataclass(frozen=True)
class ListRead:
    """The rows of a list read top to bottom, the last screen read, and whether the end was reached."""

    rows: tuple[Row, ...]
    screen: Screen
    whole: bool

    def more(self, what: str) -> str | None:
        """What the result says when the reading stopped before the list's end, else None."""
        if self.whole:
            return None
        return (f"showing the first {len(self.rows)} {what}; the list goes on: the screen is left where reading "
                "stopped, scroll it to read the rest")


def rows_on(screen: Screen, anchor: str, fields: Sequence[str]) -> list[Row]:
    """The list rows wholly on ``screen``, top to bottom: each ``anchor`` element with the first
    element of every ``fields`` id from its top down to the next anchor. A row cut by the list's
    edge lacks some of them and is left out (it is read whole on the page before or after)."""
    anchors = sorted(by_id(screen, anchor), key=lambda e: e.bounds.top)
    found = {f: by_id(screen, f) for f in fields}
    rows = []
    for i, head in enumerate(anchors):
        below = anchors[i + 1].bounds.top if i + 1 < len(anchors) else None
        row = {anchor: head}
        for f, elements in found.items():
            match = next((e for e in elements if head.bounds.top <= e.bounds.center[1] and (below is None or e.bounds.center[1] < below)), None)
            if match is not None:
                row[f] = match
        if len(row) == len(fields) + 1:
            rows.append(row)
    return rows


def _key(row: Row) -> tuple[str, ...]:
    return tuple(e.text for e in row.values())


def _new_rows(seen: list[Row], page: list[Row]) -> list[Row]:
    """The rows of ``page`` after its overlap with the end of ``seen`` (the longest suffix of
    ``seen`` that ``page`` starts with): identical rows next to each other are kept apart."""
    keys, page_keys = [_key(r) for r in seen], [_key(r) for r in page]
    for k in range(min(len(keys), len(page_keys)), 0, -1):
        if keys[-k:] == page_keys[:k]:
            return page[k:]
    return page


def _scroller(screen: Screen, rows: list[Row]) -> Element | None:
    """The scrollable element the rows lie in, if the list scrolls at all."""
    if not rows:
        return None
    x, y = next(iter(rows[0].values())).bounds.center
    inside = [e for e in screen.elements if e.scrollable and e.bounds.left <= x < e.bounds.right and e.bounds.top <= y < e.bounds.bottom]
    return min(inside, key=lambda e: (e.bounds.bottom - e.bounds.top) * (e.bounds.right - e.bounds.left), default=None)


def swipe_list(ctx: ToolContext, scroller: Element, direction: Literal["down", "up"]) -> Screen:
    """Drag half the list's height (down: further down the list), as ``scroll`` does, and read
    the screen once it has stopped moving."""
    b = scroller.bounds
    x, top, bottom = b.center[0], b.top + (b.bottom - b.top) // 4, b.bottom - (b.bottom - b.top) // 4
    start, end = (bottom, top) if direction == "down" else (top, bottom)
    ctx.device.swipe(x, start, x, end, 0.3)
    screen = ctx.observe()
    for _ in range(3):  # a fling may still be moving it
        again = ctx.observe()
        if again.digest == screen.digest:
            break
        screen = again
    return screen


def read_list(ctx: ToolContext, screen: Screen, anchor: str, fields: Sequence[str] = (), *,
              until: Callable[[list[Row]], bool] | None = None, max_rows: int = 60) -> ListRead:
    """Every row of the list on ``screen``, scrolling down until no new row comes (the end) or
    ``until(rows on the screen)`` holds (the screen then shows them), with at most ``max_rows``
    rows and :data:`MAX_SCROLLS` swipes; ``whole`` says whether the end was reached."""
    page = rows_on(screen, anchor, fields)
    rows = list(page)
    for _ in range(MAX_SCROLLS):
        if until is not None and until(page):
            return ListRead(tuple(rows), screen, whole=False)
        if len(rows) > max_rows:  # one row past the bound: the list does go on
            return ListRead(tuple(rows[:max_rows]), screen, whole=False)
        scroller = _scroller(screen, page)
        if scroller is None:
            return ListRead(tuple(rows), screen, whole=True)
        screen = swipe_list(ctx, scroller, "down")
        page = rows_on(screen, anchor, fields)
        new = _new_rows(rows, page)
        if not new:
            return ListRead(tuple(rows), screen, whole=True)
        rows += new
    return ListRead(tuple(rows), screen, whole=False)


def find_in_list(ctx: ToolContext, screen: Screen, anchor: str, wanted: str, what: str) -> tuple[Element, Screen]:
    """The ``anchor`` element that :func:`pick` chooses for ``wanted`` among the whole list, on
    the screen returned with it (scrolled to it): an exact match is taken where it first shows."""
    exact = wanted.strip().lower()

    def shows(page: list[Row]) -> bool:
        return any(r[anchor].text.strip().lower() == exact for r in page)

    read = read_list(ctx, screen, anchor, until=shows, max_rows=10**6)
    chosen = pick([r[anchor] for r in read.rows], wanted, what)
    screen = read.screen
    for _ in range(MAX_SCROLLS + 1):
        here = [e for e in by_id(screen, anchor) if e.text == chosen.text]
        if here:
            return here[0], screen
        scroller = _scroller(screen, rows_on(screen, anchor, ()))
        if scroller is None:
            break
        before, screen = screen, swipe_list(ctx, scroller, "up")  # a close match lies above where the reading stopped
        if screen.digest == before.digest:
            break
    raise ToolFailure(ErrorCode.element_not_found, f"the {what} {chosen.text!r} went out of sight while scrolling; call read_screen")
