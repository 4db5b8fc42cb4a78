"""View trees of the virtual phone and their uiautomator hierarchy XML.

A screen is a tree of ViewNode (widget class, resource-id, text, content-desc, bounds,
state flags, children) built by the foreground activity. It renders exactly in the shape
`uiautomator dump` and the uiautomator2 server produce, and a tap dispatches to the
deepest clickable node under the point (later siblings are drawn on top).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator
from xml.sax.saxutils import quoteattr

XML_HEADER = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n"


@dataclass(frozen=True)
class Bounds:
    left: int
    top: int
    right: int
    bottom: int

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x < self.right and self.top <= y < self.bottom

    @property
    def center(self) -> tuple[int, int]:
        return (self.left + self.right) // 2, (self.top + self.bottom) // 2

    def __str__(self) -> str:
        return f"[{self.left},{self.top}][{self.right},{self.bottom}]"

    def as_dict(self) -> dict[str, int]:
        return {"left": self.left, "top": self.top, "right": self.right, "bottom": self.bottom}


@dataclass
class ViewNode:
    """One view. Callbacks make it interactive; they are not part of the dump."""

    cls: str
    bounds: Bounds
    text: str = ""
    resource_id: str = ""
    content_desc: str = ""
    package: str = ""
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    hint: str = ""
    value: str = ""
    """An editable field's own content; `text` shows the hint while it is empty, as on Android."""
    children: list["ViewNode"] = field(default_factory=list)
    on_click: Callable[[], None] | None = None
    on_set_text: Callable[[str], None] | None = None

    @property
    def editable(self) -> bool:
        return self.on_set_text is not None

    def set_package(self, package: str) -> None:
        for node, _, _ in walk(self):
            if not node.package:
                node.package = package


def walk(root: ViewNode) -> Iterator[tuple[ViewNode, int, int]]:
    """Pre-order (node, index among siblings, depth), the order uiautomator uses."""
    stack: list[tuple[ViewNode, int, int]] = [(root, 0, 0)]
    while stack:
        node, index, depth = stack.pop()
        yield node, index, depth
        for i in range(len(node.children) - 1, -1, -1):
            stack.append((node.children[i], i, depth + 1))


def hit_test(root: ViewNode, x: float, y: float) -> ViewNode | None:
    """The deepest clickable node containing (x, y), topmost sibling first."""
    if not root.bounds.contains(x, y):
        return None
    for child in reversed(root.children):
        hit = hit_test(child, x, y)
        if hit is not None:
            return hit
    return root if root.clickable and root.enabled else None


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _q(text: str) -> str:
    # uiautomator's dumper replaces characters XML cannot hold (AccessibilityNodeInfoDumper
    # strips invalid XML characters), so a dump always parses.
    return quoteattr(_NOT_XML.sub("?", text), {'"': "&quot;"})


def _b(v: bool) -> str:
    return "true" if v else "false"


def _node_xml(node: ViewNode, index: int, depth: int, max_depth: int, out: list[str]) -> None:
    attrs = (
        f'<node index="{index}" text={_q(node.text)} resource-id={_q(node.resource_id)}'
        f' class={_q(node.cls)} package={_q(node.package)}'
        f' content-desc={_q(node.content_desc)} checkable="{_b(node.checkable)}"'
        f' checked="{_b(node.checked)}" clickable="{_b(node.clickable)}" enabled="{_b(node.enabled)}"'
        f' focusable="{_b(node.focusable)}" focused="{_b(node.focused)}"'
        f' scrollable="{_b(node.scrollable)}" long-clickable="{_b(node.long_clickable)}"'
        f' password="{_b(node.password)}" selected="{_b(node.selected)}" bounds="{node.bounds}"'
        f' displayed="true"'
    )
    children = node.children if depth < max_depth else []
    if not children:
        out.append(attrs + " />")
        return
    out.append(attrs + ">")
    for i, child in enumerate(children):
        _node_xml(child, i, depth + 1, max_depth, out)
    out.append("</node>")


def hierarchy_xml(root: ViewNode, rotation: int = 0, max_depth: int = 50) -> str:
    """The uiautomator dump of one window rooted at `root`."""
    out: list[str] = [XML_HEADER, f'<hierarchy rotation="{rotation}">']
    _node_xml(root, 0, 0, max_depth, out)
    out.append("</hierarchy>")
    return "".join(out)


def obj_info(node: ViewNode, child_count: int | None = None) -> dict[str, object]:
    """The uiautomator2 server's `objInfo` shape for a node."""
    return {
        "bounds": node.bounds.as_dict(),
        "checkable": node.checkable,
        "checked": node.checked,
        "childCount": len(node.children) if child_count is None else child_count,
        "className": node.cls,
        "clickable": node.clickable,
        "contentDescription": node.content_desc or None,
        "enabled": node.enabled,
        "focusable": node.focusable,
        "focused": node.focused,
        "longClickable": node.long_clickable,
        "packageName": node.package,
        "resourceName": node.resource_id or None,
        "scrollable": node.scrollable,
        "selected": node.selected,
        "text": node.text,
        "visibleBounds": node.bounds.as_dict(),
    }
