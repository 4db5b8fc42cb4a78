"""uiautomator2 `Selector` dicts (with their `mask` bits) matched against a view tree,
the way UiSelector does: every set field must match; `instance` picks the n-th match in
pre-order; `child`/`sibling` narrow the search like UiSelector.childSelector/fromParent."""

from __future__ import annotations

import re
from typing import Any, Callable

from device_farm.virtual.ui.views import ViewNode, walk

MASKS: dict[str, int] = {
    "text": 0x01, "textContains": 0x02, "textMatches": 0x04, "textStartsWith": 0x08,
    "className": 0x10, "classNameMatches": 0x20, "description": 0x40,
    "descriptionContains": 0x80, "descriptionMatches": 0x0100, "descriptionStartsWith": 0x0200,
    "checkable": 0x0400, "checked": 0x0800, "clickable": 0x1000, "longClickable": 0x2000,
    "scrollable": 0x4000, "enabled": 0x8000, "focusable": 0x010000, "focused": 0x020000,
    "selected": 0x040000, "packageName": 0x080000, "packageNameMatches": 0x100000,
    "resourceId": 0x200000, "resourceIdMatches": 0x400000, "index": 0x800000,
    "instance": 0x01000000,
}


def _full(pattern: str, value: str) -> bool:
    try:
        return re.fullmatch(pattern, value, re.DOTALL) is not None
    except re.error:
        return False


_CHECKS: dict[str, Callable[[ViewNode, int, Any], bool]] = {
    "text": lambda n, i, v: n.text == v,
    "textContains": lambda n, i, v: v in n.text,
    "textMatches": lambda n, i, v: _full(v, n.text),
    "textStartsWith": lambda n, i, v: n.text.startswith(v),
    "className": lambda n, i, v: n.cls == v,
    "classNameMatches": lambda n, i, v: _full(v, n.cls),
    "description": lambda n, i, v: n.content_desc == v,
    "descriptionContains": lambda n, i, v: v in n.content_desc,
    "descriptionMatches": lambda n, i, v: _full(v, n.content_desc),
    "descriptionStartsWith": lambda n, i, v: n.content_desc.startswith(v),
    "checkable": lambda n, i, v: n.checkable == bool(v),
    "checked": lambda n, i, v: n.checked == bool(v),
    "clickable": lambda n, i, v: n.clickable == bool(v),
    "longClickable": lambda n, i, v: n.long_clickable == bool(v),
    "scrollable": lambda n, i, v: n.scrollable == bool(v),
    "enabled": lambda n, i, v: n.enabled == bool(v),
    "focusable": lambda n, i, v: n.focusable == bool(v),
    "focused": lambda n, i, v: n.focused == bool(v),
    "selected": lambda n, i, v: n.selected == bool(v),
    "packageName": lambda n, i, v: n.package == v,
    "packageNameMatches": lambda n, i, v: _full(v, n.package),
    "resourceId": lambda n, i, v: n.resource_id == v,
    "resourceIdMatches": lambda n, i, v: _full(v, n.resource_id),
    "index": lambda n, i, v: i == int(v),
}


def _fields(selector: dict[str, Any]) -> list[tuple[str, Any]]:
    mask = int(selector.get("mask", 0))
    return [(k, selector[k]) for k, bit in MASKS.items()
            if k in selector and k != "instance" and (mask & bit or "mask" not in selector)]


def _matches_here(root: ViewNode, selector: dict[str, Any], include_root: bool) -> list[ViewNode]:
    fields = _fields(selector)
    found = [node for node, index, depth in walk(root)
             if (include_root or depth > 0) and all(_CHECKS[k](node, index, v) for k, v in fields)]
    if "instance" in selector and int(selector.get("mask", 0)) & MASKS["instance"]:
        n = int(selector["instance"])
        return found[n : n + 1]
    return found


def _parent_of(root: ViewNode, target: ViewNode) -> ViewNode | None:
    for node, _, _ in walk(root):
        if any(child is target for child in node.children):
            return node
    return None


def find_all(root: ViewNode, selector: dict[str, Any]) -> list[ViewNode]:
    """Every node the selector designates, in pre-order."""
    found = _matches_here(root, selector, include_root=True)
    relations = selector.get("childOrSibling") or []
    subs = selector.get("childOrSiblingSelector") or []
    for relation, sub in zip(relations, subs):
        narrowed: list[ViewNode] = []
        for node in found:
            scope = node if relation == "child" else _parent_of(root, node)
            if scope is not None:
                narrowed.extend(n for n in _matches_here(scope, sub, include_root=False)
                                if all(n is not m for m in narrowed))
        found = narrowed
    return found


def find(root: ViewNode, selector: dict[str, Any]) -> ViewNode | None:
    found = find_all(root, selector)
    return found[0] if found else None


def describe(selector: dict[str, Any]) -> str:
    """UiSelector's toString, for error messages."""
    parts = [f"{k.upper()}={v}" for k, v in _fields(selector)]
    return "UiSelector[" + ", ".join(parts) + "]"
