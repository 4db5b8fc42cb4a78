"""Scripted planner: replays a fixed list of model outputs, for tests, demos and replays.

Each turn emits the next scripted item as text — a :class:`ToolCall` is written in the same
``<tool_call>`` form a model writes, a plain string is emitted as-is (so malformed output can be
scripted) — and the text goes through the same parser as a real model's output.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

from planner_runtime.contract import Message, ToolCall, ToolSpec, Usage
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.toolcalls import format_tool_call, parse_tool_calls


class ScriptedPlanner:
    """Emits ``script`` one item per turn, then ``finish`` once the script runs out."""

    name = "scripted"

    def __init__(self, script: Iterable[ToolCall | str | dict[str, Any]] = (), *, release: str = "scripted") -> None:
        self.release = release
        self._items: list[str] = [self._as_text(item) for item in script]
        self._turn = 0

    @property
    def turns(self) -> int:
        """How many turns this planner has answered."""
        return self._turn

    @staticmethod
    def _as_text(item: ToolCall | str | dict[str, Any]) -> str:
        if isinstance(item, ToolCall):
            return format_tool_call(item)
        if isinstance(item, dict):
            return format_tool_call(ToolCall(name=item["name"], arguments=item.get("arguments", {})))
        return item

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        started = time.perf_counter()
        if self._turn < len(self._items):
            text = self._items[self._turn]
        else:
            text = format_tool_call(ToolCall(name="finish", arguments={"answer": "script exhausted"}))
        self._turn += 1
        calls, errors = parse_tool_calls(text)
        prompt_chars = sum(len(m.content) for m in messages)
        return PlannerOutput(
            text=text,
            tool_calls=tuple(calls),
            errors=tuple(errors),
            # Rough token counts (4 chars a token) so cost accounting has figures to sum.
            usage=Usage(prompt_tokens=prompt_chars // 4, completion_tokens=max(1, len(text) // 4)),
            timings={"plan_s": time.perf_counter() - started},
        )
