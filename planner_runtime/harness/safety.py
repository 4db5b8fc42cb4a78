"""The safety gate: sensitive actions run only when the user confirms or a policy allows them.

Tools declare a sensitivity category (send, call, pay, purchase, delete, share, install,
security). Before such a tool runs, the gate asks the ``confirm`` callback when one is given (the
y/n prompt of ``planner-agent run``) and otherwise applies the policy, which denies by default.
The decision depends only on the tool and its arguments, never on text from the screen,
notifications or messages — so planted instructions cannot unlock anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from planner_runtime.errors import ConfigError


class Sensitivity(StrEnum):
    send = "send"  # messages, email
    call = "call"
    pay = "pay"
    purchase = "purchase"
    delete = "delete"
    share = "share"  # location, contacts, files
    install = "install"
    security = "security"  # security and privacy settings


class Policy(BaseModel):
    """What may run without asking: categories and/or tool names. Empty = deny all."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    allow: frozenset[Sensitivity] = frozenset()
    allow_tools: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: Path) -> Policy:
        try:
            return cls.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"{path}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from exc

    def allows(self, tool: str, category: Sensitivity) -> bool:
        return category in self.allow or tool in self.allow_tools


# What a button's label says it does, for taps the planner makes itself: the gate must not be
# bypassed by opening an app and pressing its Send or Pay button by hand. Checked in order.
_BUTTON_LABELS: tuple[tuple[Sensitivity, re.Pattern[str]], ...] = (
    (Sensitivity.pay, re.compile(r"\b(pay|send money|transfer|send now)\b")),
    (Sensitivity.purchase, re.compile(r"\b(buy now|place (your )?order|purchase|checkout|check out|complete booking|reserve|book now|confirm booking)\b")),
    (Sensitivity.send, re.compile(r"\b(send|send sms|send message|forward|share)\b")),
    (Sensitivity.call, re.compile(r"\b(call|dial|start call|voice call)\b(?! log| history)|dial_button|call_button")),
    (Sensitivity.delete, re.compile(r"\b(delete|remove|erase|clear data|uninstall)\b")),
    (Sensitivity.install, re.compile(r"\b(install)\b")),
)


def button_sensitivity(label: str, resource_id: str = "") -> Sensitivity | None:
    """The sensitive action a button performs, judged from its label and resource-id. Only short
    labels count: a message or list row that merely mentions "send" is content, not a button."""
    short = label if len(label) <= 24 and len(label.split()) <= 3 else ""
    text = f"{short} {resource_id.rpartition('/')[2].replace('_', ' ')} {resource_id}".lower()
    return next((category for category, pattern in _BUTTON_LABELS if pattern.search(text)), None)


Confirm = Callable[[str, Sensitivity, dict[str, Any]], bool]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


@dataclass
class SafetyGate:
    policy: Policy = field(default_factory=Policy)
    confirm: Confirm | None = None
    log: list[tuple[str, Sensitivity, bool, str]] = field(default_factory=list)  # every decision, for the record

    def decide(self, tool: str, category: Sensitivity, arguments: dict[str, Any]) -> Decision:
        if self.policy.allows(tool, category):
            decision = Decision(True, "allowed by policy")
        elif self.confirm is not None:
            ok = self.confirm(tool, category, arguments)
            decision = Decision(ok, "confirmed by the user" if ok else "the user declined")
        else:
            decision = Decision(False, f"{category.value} actions need the user's confirmation and the policy does not allow them")
        self.log.append((tool, category, decision.allowed, decision.reason))
        return decision
