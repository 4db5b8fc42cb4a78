"""Constructors for the real Android widget classes the apps use, with the flags those
widgets carry in a uiautomator dump (EditText is clickable, focusable and long-clickable;
a Switch is checkable; and so on)."""

from __future__ import annotations

from typing import Callable, Protocol

from device_farm.virtual.ui.views import Bounds, ViewNode


class HasFocus(Protocol):
    """What an EditText asks of its screen: which field has focus (an activity answers)."""

    focused: str | None


def text_view(bounds: Bounds, text: str, resource_id: str = "", desc: str = "",
              on_click: Callable[[], None] | None = None) -> ViewNode:
    return ViewNode("android.widget.TextView", bounds, text=text, resource_id=resource_id,
                    content_desc=desc, clickable=on_click is not None,
                    focusable=on_click is not None, on_click=on_click)


def button(bounds: Bounds, text: str, resource_id: str = "", desc: str = "",
           on_click: Callable[[], None] | None = None, image: bool = False) -> ViewNode:
    return ViewNode("android.widget.ImageButton" if image else "android.widget.Button", bounds,
                    text=text, resource_id=resource_id, content_desc=desc, clickable=True,
                    focusable=True, on_click=on_click)


def switch(bounds: Bounds, checked: bool, resource_id: str,
           on_click: Callable[[], None] | None) -> ViewNode:
    return ViewNode("android.widget.Switch", bounds, text="ON" if checked else "OFF",
                    resource_id=resource_id, checkable=True, checked=checked, clickable=True,
                    focusable=True, on_click=on_click)


def edit_text(activity: HasFocus, bounds: Bounds, resource_id: str, hint: str, value: str,
              on_change: Callable[[str], None]) -> ViewNode:
    """An EditText; while empty its text is the hint, as Android reports it."""
    return ViewNode("android.widget.EditText", bounds, text=value or hint, hint=hint, value=value,
                    resource_id=resource_id, clickable=True, focusable=True, long_clickable=True,
                    focused=activity.focused == resource_id, on_set_text=on_change)


def group(bounds: Bounds, children: list[ViewNode], resource_id: str = "",
          cls: str = "android.view.ViewGroup", scrollable: bool = False,
          on_click: Callable[[], None] | None = None) -> ViewNode:
    return ViewNode(cls, bounds, resource_id=resource_id, scrollable=scrollable, children=children,
                    clickable=on_click is not None, focusable=on_click is not None,
                    on_click=on_click)


def row_list(bounds: Bounds, rows: list[Callable[[Bounds], ViewNode]], row_height: int, first: int,
             resource_id: str, cls: str = "androidx.recyclerview.widget.RecyclerView") -> ViewNode:
    """A list showing the rows that fit from index ``first`` on; scrollable when some do not fit.
    Each row is built by its function from the bounds it gets."""
    fit = max(1, (bounds.bottom - bounds.top) // row_height)
    children = [make(Bounds(bounds.left, bounds.top + i * row_height, bounds.right,
                            bounds.top + (i + 1) * row_height))
                for i, make in enumerate(rows[first:first + fit])]
    return group(bounds, children, resource_id, cls, scrollable=len(rows) > fit)


def scrolled(first: int, dy: int, row_height: int, total: int, bounds: Bounds) -> int:
    """The first visible row after a drag of ``dy`` pixels over a ``row_list``."""
    fit = max(1, (bounds.bottom - bounds.top) // row_height)
    steps = round(dy / row_height) or (1 if dy > 0 else -1)
    return max(0, min(max(0, total - fit), first + steps))
