"""Planner protocol, its output record and the registry of backends by short name.

A planner turns chat messages plus tool specs into text and parsed tool calls. Backends are
imported lazily by name, so loading the registry never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, Sequence, runtime_checkable

from pydantic import Field

from planner_runtime.contract import Message, Record, ToolCall, ToolError, ToolSpec, Usage
from planner_runtime.errors import ConfigError


class Sampling(Record):
    """Decoding settings; temperature 0 means greedy."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    seed: int = 0


class PlannerOutput(Record):
    """What a planner produced for one turn.

    ``tool_calls`` holds the calls that parsed; ``errors`` says what did not (malformed JSON, no
    call at all), so the harness can answer with feedback instead of raising.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    errors: tuple[ToolError, ...] = ()
    usage: Usage = Usage()
    timings: dict[str, float] = Field(default_factory=dict)


@runtime_checkable
class Planner(Protocol):
    name: str
    release: str

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput: ...


_REGISTRY: dict[str, str] = {
    "scripted": "planner_runtime.planners.scripted:ScriptedPlanner",
    "local": "planner_runtime.planners.local:LocalPlanner",
}


def available() -> list[str]:
    return sorted(_REGISTRY)


def create(name: str, **kwargs: Any) -> Planner:
    """Build the planner registered under ``name`` with backend-specific keyword arguments."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown planner {name!r}; choose one of {', '.join(available())}") from None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)(**kwargs)
