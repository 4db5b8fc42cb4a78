"""The safety gate: sensitive actions run only when the user confirms or a policy allows them.

Sensitivity comes in categories (send, call, pay, purchase, delete, share, install, security).
Tools declare the category of what they do, and every effect a tool has on the phone — a tap,
a key press, an intent, a shell command — is judged by :mod:`planner_runtime.harness.effects`
before it happens, so a tap on the Location switch meets the same gate as ``set_location``.
The gate asks the ``confirm`` callback when one is given (the y/n prompt of ``planner-agent
run``) and otherwise applies the policy, which denies by default. The decision depends only on
the effect, the tool and its arguments, never on text from the screen, notifications or
messages — so planted instructions cannot unlock anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, NamedTuple

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
        """The policy in a YAML file: ``allow: [send, call]`` and/or ``allow_tools: [tap]``.
        Anything else is a :class:`ConfigError` of one line naming the file and the field."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping with 'allow' and/or 'allow_tools', got a {_yaml_kind(data)}")
        for key in ("allow", "allow_tools"):
            if key in data and not isinstance(data[key], list):
                raise ConfigError(f"{path}: {key}: expected a list, got a {_yaml_kind(data[key])}")
        unknown = [c for c in data.get("allow", []) if c not in Sensitivity.__members__.values()]
        if unknown:
            known = ", ".join(c.value for c in Sensitivity)
            raise ConfigError(f"{path}: allow: unknown category {unknown[0]!r} (known: {known})")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"{path}: {'.'.join(str(p) for p in err['loc']) or 'policy'}: {err['msg']}") from exc

    def allows(self, tool: str, category: Sensitivity) -> bool:
        return category in self.allow or tool in self.allow_tools


def _yaml_kind(value: Any) -> str:
    return {list: "list", dict: "mapping", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), type(value).__name__)


Confirm = Callable[[str, Sensitivity, dict[str, Any]], bool]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


class GateRecord(NamedTuple):
    """One decision, for the record: who asked, for what category and effect, and the outcome."""

    tool: str
    category: Sensitivity
    allowed: bool
    reason: str
    effect: str = ""  # what would have happened: the tool itself, or the tap/intent/command it made


@dataclass
class SafetyGate:
    policy: Policy = field(default_factory=Policy)
    confirm: Confirm | None = None
    log: list[GateRecord] = field(default_factory=list)  # every decision, for the record

    def decide(self, tool: str, category: Sensitivity, arguments: dict[str, Any], effect: str = "") -> Decision:
        """Whether ``tool`` may have an effect of ``category`` (described by ``effect``) now."""
        if self.policy.allows(tool, category):
            decision = Decision(True, "allowed by policy")
        elif self.confirm is not None:
            ok = self.confirm(tool, category, arguments)
            decision = Decision(ok, "confirmed by the user" if ok else "the user declined")
        else:
            decision = Decision(False, f"{category.value} actions need the user's confirmation and the policy does not allow them")
        self.log.append(GateRecord(tool, category, decision.allowed, decision.reason, effect or tool))
        return decision
