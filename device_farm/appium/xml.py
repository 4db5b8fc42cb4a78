"""Appium page sources → the uiautomator dump shape that :mod:`device_farm.hierarchy` reads.

UiAutomator2's page source already is a uiautomator dump (``<hierarchy><node ...>``) and
passes through unchanged. Other drivers name elements by tag and spell attributes their own
way: XCUITest (``XCUIElementTypeButton`` with ``name``/``label``/``value``/``x``/``y``/``width``/
``height``), Espresso-like and the fake driver (``left``/``top``/``width``/``height``/``id``). Each
element becomes a ``<node>`` with ``class``, ``text``, ``resource-id``, ``content-desc``,
``bounds`` (derived from the geometry attributes, absent when there are none) and the state
flags, inferred from the widget kind where the source has no flag. Text inputs get the class
``android.widget.EditText`` (their own kind kept in ``appium-class``) so the planner sees them
as typeable.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

INPUT_CLASS = "android.widget.EditText"
# Tag fragments of text inputs across drivers (XCUITest TextView is editable, Android's is not).
INPUT_KINDS = ("TextField", "SecureTextField", "SearchField", "InputField", "EditText", "XCUIElementTypeTextView")
_CLICKABLE_KINDS = ("Button", "Switch", "CheckBox", "Checkbox", "Radio", "Toggle", "Link", "Cell", "Tab",
                    "MenuItem", "ListItem", "Key", "Slider") + INPUT_KINDS
_CHECKABLE_KINDS = ("Switch", "CheckBox", "Checkbox", "Radio", "Toggle")
_SCROLLABLE_KINDS = ("ScrollView", "Table", "CollectionView", "ListView", "RecyclerView", "WebView")
_BOUNDS = re.compile(r"\[-?\d+,-?\d+\]\[-?\d+,-?\d+\]")
_FLAGS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
          "long-clickable", "password", "selected")


def is_input_kind(kind: str) -> bool:
    return any(k in kind for k in INPUT_KINDS)


def _first(attrs: dict[str, str], *names: str) -> str:
    for name in names:
        value = attrs.get(name)
        if value:
            return value
    return ""


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _bounds(attrs: dict[str, str]) -> str:
    if _BOUNDS.fullmatch(attrs.get("bounds", "")):
        return attrs["bounds"]
    left, top = _number(_first(attrs, "x", "left")), _number(_first(attrs, "y", "top"))
    width, height = _number(attrs.get("width", "")), _number(attrs.get("height", ""))
    if None in (left, top, width, height):
        return ""
    l, t = round(left), round(top)  # type: ignore[arg-type]
    return f"[{l},{t}][{l + round(width)},{t + round(height)}]"  # type: ignore[arg-type]


def _flag(attrs: dict[str, str], name: str, inferred: bool) -> str:
    value = attrs.get(name)
    if value is None:
        return "true" if inferred else "false"
    return "true" if value.lower() in ("true", "1") else "false"


def _node(element: ET.Element, index: int, package: str) -> ET.Element:
    attrs = dict(element.attrib)
    kind = _first(attrs, "class", "type") or element.tag
    editable = is_input_kind(kind)
    checkable = any(k in kind for k in _CHECKABLE_KINDS)
    text = _first(attrs, "text", "value", "label") if not checkable else _first(attrs, "text", "label")
    out = {
        "index": str(index),
        "text": text,
        "resource-id": _first(attrs, "resource-id", "resourceId", "id"),
        "class": INPUT_CLASS if editable else kind,
        "package": _first(attrs, "package") or package,
        "content-desc": _first(attrs, "content-desc", "contentDescription", "accessibilityId", "name"),
        "checkable": _flag(attrs, "checkable", checkable),
        "checked": _flag(attrs, "checked", checkable and attrs.get("value", "") in ("1", "true")),
        "clickable": _flag(attrs, "clickable", any(k in kind for k in _CLICKABLE_KINDS)),
        "enabled": _flag(attrs, "enabled", True),
        "focusable": _flag(attrs, "focusable", editable),
        "focused": _flag(attrs, "focused", False),
        "scrollable": _flag(attrs, "scrollable", any(k in kind for k in _SCROLLABLE_KINDS)),
        "long-clickable": _flag(attrs, "long-clickable", False),
        "password": _flag(attrs, "password", "Secure" in kind),
        "selected": _flag(attrs, "selected", False),
    }
    if editable:
        out["appium-class"] = kind
    bounds = _bounds(attrs)
    if bounds:
        out["bounds"] = bounds
    if attrs.get("visible", "true").lower() == "false":
        out["bounds"] = "[0,0][0,0]"  # hidden: the parser drops empty bounds
    node = ET.Element("node", out)
    for i, child in enumerate(element):
        node.append(_node(child, i, out["package"]))
    return node


def to_uiautomator_xml(source: str) -> str:
    """The page source as a uiautomator dump; a source that already is one is returned as is."""
    root = ET.fromstring(source.encode("utf-8"))
    if root.tag == "hierarchy":
        return source
    top = list(root) if root.tag == "AppiumAUT" else [root]  # the fake driver's wrapper
    hierarchy = ET.Element("hierarchy", {"rotation": "0"})
    for i, element in enumerate(top):
        hierarchy.append(_node(element, i, _first(dict(element.attrib), "package", "bundleId")))
    return "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>" + ET.tostring(hierarchy, encoding="unicode")
