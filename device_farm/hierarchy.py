"""UI hierarchy XML (uiautomator dump format) → a compact element list for the planner.

Only elements a person could read or act on are kept: those with text or a description, and
those that are clickable, checkable, editable or scrollable. Ids are positions in document
order, so they stay the same across steps while the screen is unchanged; the digest changes
exactly when what the planner would see changes.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

# Characters XML 1.0 forbids; uiautomator replaces them, but not every dumper does.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|&#(?:x0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F])|0*(?:[0-8]|1[124-9]|2[0-9]|3[01]));")
_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_EDITABLE = ("EditText", "AutoCompleteTextView", "SearchView")


@dataclass(frozen=True)
class Bounds:
    left: int
    top: int
    right: int
    bottom: int

    @property
    def center(self) -> tuple[int, int]:
        return (self.left + self.right) // 2, (self.top + self.bottom) // 2

    @property
    def empty(self) -> bool:
        return self.right <= self.left or self.bottom <= self.top


@dataclass(frozen=True)
class Element:
    id: int
    role: str  # short widget class: Button, Switch, EditText, TextView...
    text: str
    description: str
    resource_id: str
    bounds: Bounds
    clickable: bool = False
    long_clickable: bool = False
    checkable: bool = False
    checked: bool = False
    editable: bool = False
    focused: bool = False
    enabled: bool = True
    scrollable: bool = False
    selected: bool = False
    class_name: str = ""
    package: str = ""

    @property
    def actions(self) -> tuple[str, ...]:
        acts = []
        if self.clickable or self.checkable:
            acts.append("tap")
        if self.long_clickable:
            acts.append("long_press")
        if self.editable:
            acts.append("type")
        if self.scrollable:
            acts.append("scroll")
        return tuple(acts)

    def describe(self) -> str:
        """One line of the planner's screen text, e.g. ``[3] Switch "7:30 AM" id=onoff checked tap``."""
        parts = [f"[{self.id}] {self.role}"]
        label = self.text or self.description
        if label:
            parts.append(f'"{label}"')
        if self.description and self.text:
            parts.append(f'desc="{self.description}"')
        if self.resource_id:
            parts.append("id=" + self.resource_id.rpartition("/")[2])
        flags = [f for f in ("checked", "focused", "selected") if getattr(self, f)]
        if not self.enabled:
            flags.append("disabled")
        parts.extend(flags)
        parts.extend(self.actions)
        return " ".join(parts)


@dataclass(frozen=True)
class Screen:
    package: str
    elements: tuple[Element, ...]
    digest: str

    def element(self, element_id: int) -> Element | None:
        if 0 <= element_id < len(self.elements):
            return self.elements[element_id]
        return None

    def to_text(self, max_chars: int = 4000) -> str:
        """The screen as the planner reads it, cut to ``max_chars`` with a note when cut."""
        lines = [f"app: {self.package}"] + [e.describe() for e in self.elements]
        out, used = [], 0
        for i, line in enumerate(lines):
            if used + len(line) + 1 > max_chars:
                out.append(f"... {len(lines) - i} more elements not shown")
                break
            out.append(line)
            used += len(line) + 1
        return "\n".join(out)


def _flag(node: ET.Element, name: str) -> bool:
    return node.get(name) == "true"


def _area(node: ET.Element) -> int:
    m = _BOUNDS.match(node.get("bounds", ""))
    if not m:
        return 0
    left, top, right, bottom = map(int, m.groups())
    return max(0, right - left) * max(0, bottom - top)


def _top_window_package(root: ET.Element) -> str:
    """The package of the topmost window that covers at least half the screen: windows (a
    node whose package differs from its parent's) come in z-order, so a dialog or the
    notification shade over an app wins, while a status bar or a keyboard does not."""
    full = max((_area(n) for n in root.iter("node")), default=0)
    top = ""
    stack: list[tuple[ET.Element, str]] = [(child, "") for child in reversed(list(root))]
    while stack:
        node, parent_pkg = stack.pop()
        pkg = node.get("package", "")
        if pkg and pkg != parent_pkg and full and _area(node) * 2 >= full:
            top = pkg
        stack.extend((child, pkg or parent_pkg) for child in reversed(list(node)))
    return top


def parse_hierarchy(xml: str) -> Screen:
    """Parse a uiautomator hierarchy dump into a :class:`Screen`."""
    if isinstance(xml, bytes):
        xml = xml.decode("utf-8", "replace")
    root = ET.fromstring(_INVALID_XML.sub("\ufffd", xml).encode("utf-8"))
    elements: list[Element] = []
    packages: list[str] = []
    for node in root.iter("node"):
        m = _BOUNDS.match(node.get("bounds", ""))
        bounds = Bounds(*map(int, m.groups())) if m else Bounds(0, 0, 0, 0)
        cls = node.get("class", "")
        role = cls.rpartition(".")[2] or "View"
        text, desc = node.get("text", ""), node.get("content-desc", "")
        editable = any(role.endswith(e) for e in _EDITABLE)
        actionable = any(_flag(node, f) for f in ("clickable", "checkable", "scrollable", "long-clickable"))
        if node.get("package"):
            packages.append(node.get("package", ""))
        if bounds.empty or not (text or desc or actionable or editable):
            continue
        elements.append(
            Element(
                id=len(elements),
                role=role,
                text=text,
                description=desc,
                resource_id=node.get("resource-id", ""),
                bounds=bounds,
                clickable=_flag(node, "clickable"),
                long_clickable=_flag(node, "long-clickable"),
                checkable=_flag(node, "checkable"),
                checked=_flag(node, "checked"),
                editable=editable,
                focused=_flag(node, "focused"),
                enabled=node.get("enabled", "true") == "true",
                scrollable=_flag(node, "scrollable"),
                selected=_flag(node, "selected"),
                class_name=cls,
                package=node.get("package", ""),
            )
        )
    package = _top_window_package(root) or (max(set(packages), key=packages.count) if packages else "")
    digest_src = "\n".join([package] + [e.describe() + str(e.bounds) for e in elements])
    digest = hashlib.sha1(digest_src.encode("utf-8")).hexdigest()[:16]
    return Screen(package=package, elements=tuple(elements), digest=digest)


def _identity(e: Element) -> tuple[str, str, Bounds]:
    return (e.resource_id, e.role, e.bounds)


def diff_screens(previous: Screen, current: Screen) -> list[str]:
    """What changed between two screens, as lines for the planner: ``+`` appeared, ``-`` went,
    ``~`` changed in place (same widget, same place, new text or state). Empty when equal."""
    if previous.digest == current.digest:
        return []
    if previous.package != current.package:
        return [f"app changed: {previous.package or '?'} → {current.package or '?'}"]
    before = {_identity(e): e for e in previous.elements}
    after = {_identity(e): e for e in current.elements}
    lines = []
    for key, e in after.items():
        old = before.get(key)
        if old is None:
            lines.append("+ " + e.describe())
        elif old.describe().split(" ", 1)[1] != e.describe().split(" ", 1)[1]:
            lines.append(f"~ {e.describe()} (was: {old.describe().split(' ', 1)[1]})")
    lines += ["- " + e.describe() for key, e in before.items() if key not in after]
    return lines
