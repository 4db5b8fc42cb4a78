"""Intents and component names, printed the way Android's `Intent.toShortString` does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ACTION_MAIN = "android.intent.action.MAIN"
ACTION_VIEW = "android.intent.action.VIEW"
CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"
CATEGORY_HOME = "android.intent.category.HOME"
CATEGORY_DEFAULT = "android.intent.category.DEFAULT"
FLAG_ACTIVITY_NEW_TASK = 0x10000000


@dataclass(frozen=True)
class ComponentName:
    package: str
    cls: str

    @classmethod
    def parse(cls, text: str) -> "ComponentName":
        """`pkg/.Act` or `pkg/full.Class`; ValueError without a '/'."""
        package, slash, name = text.partition("/")
        if not slash or not package or not name:
            raise ValueError(f"Bad component name: {text}")
        return cls(package, package + name if name.startswith(".") else name)

    def short(self) -> str:
        if self.cls.startswith(self.package + "."):
            return f"{self.package}/{self.cls[len(self.package):]}"
        return f"{self.package}/{self.cls}"


@dataclass
class Intent:
    action: str | None = None
    data: str | None = None
    mime_type: str | None = None
    component: ComponentName | None = None
    package: str | None = None
    categories: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    flags: int = 0

    def to_short_string(self) -> str:
        parts: list[str] = []
        if self.action:
            parts.append(f"act={self.action}")
        if self.categories:
            parts.append("cat=[" + ",".join(self.categories) + "]")
        if self.data:
            parts.append(f"dat={self.data}")
        if self.mime_type:
            parts.append(f"typ={self.mime_type}")
        if self.flags:
            parts.append(f"flg=0x{self.flags:x}")
        if self.package:
            parts.append(f"pkg={self.package}")
        if self.component:
            parts.append(f"cmp={self.component.short()}")
        if self.extras:
            parts.append("(has extras)")
        return "Intent { " + " ".join(parts) + " }"

    def extra_int(self, key: str, default: int | None = None) -> int | None:
        value = self.extras.get(key, default)
        return int(value) if value is not None else None

    def extra_str(self, key: str, default: str | None = None) -> str | None:
        value = self.extras.get(key, default)
        return None if value is None else str(value)

    def extra_bool(self, key: str, default: bool = False) -> bool:
        return bool(self.extras.get(key, default))
