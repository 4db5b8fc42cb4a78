"""Skill composites as tools: parameters in, a checked sequence of tool calls, one Feedback out.

Each step is a call to one of the episode's tools (arguments filled from the parameters; an
``element`` given as a reference is found on the current screen) or a check that an element is
on screen now. The first failing step ends the composite with that step's error code and a hint
naming the step, so the planner can take over by hand from there. Steps run through the same
:meth:`ToolSet.execute` as the planner's own calls, so each sensitive step meets the safety gate
as the step's tool; a step the gate stops makes the whole composite ``blocked``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, create_model

from device_farm.hierarchy import Element, Screen
from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.harness.skills import ElementRef, Skill
from planner_runtime.harness.tools import Blocked, Tool, ToolArgs, ToolContext, ToolFailure, ToolResult, ToolSet

_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


_WHOLE = re.compile(r"\{([A-Za-z_]\w*)\}\Z")


def _fill(value: Any, params: dict[str, Any]) -> Any:
    """``value`` with the parameters filled in; ``"{p}"`` alone keeps ``p``'s type, so a number
    parameter reaches a tool's number argument as a number (arguments are validated strictly)."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        return params[whole.group(1)] if whole is not None else value.format(**params)
    if isinstance(value, dict):
        return {k: _fill(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, params) for v in value]
    return value


def find(screen: Screen, ref: ElementRef) -> Element | None:
    """The element ``ref`` points at on ``screen``, or None."""
    candidates = [
        e for e in screen.elements
        if (ref.role is None or e.role == ref.role)
        and (ref.checked is None or e.checked == ref.checked)
        and (ref.text is None or ref.text.lower() in (e.text + " " + e.description).lower())
    ]
    if ref.near_text is None:
        return candidates[0] if candidates else None
    anchor = next((e for e in screen.elements if (e.text or e.description).startswith(ref.near_text)), None)
    if anchor is None:
        return None
    row = [e for e in candidates if e is not anchor and e.bounds.top <= anchor.bounds.center[1] + 60 and e.bounds.bottom >= anchor.bounds.center[1] - 60]
    return min(row, key=lambda e: abs(e.bounds.center[1] - anchor.bounds.center[1]), default=None)


class CompositeTool(Tool):
    """One skill's composite, offered to the planner as a single tool."""

    def __init__(self, skill: Skill, tools: ToolSet) -> None:
        self.skill, self._tools = skill, tools
        self.name = skill.tool_name  # type: ignore[misc]
        self.description = f"{skill.description} (runs the whole procedure of skill {skill.name})"  # type: ignore[misc]
        fields: dict[str, Any] = {
            name: (_TYPES.get(p.type, str), Field(description=p.description)) for name, p in skill.parameters.items()
        }
        self.Args = create_model(f"{skill.tool_name}_args", __base__=ToolArgs, **fields)  # type: ignore[misc]

    def run(self, ctx: ToolContext, args: ToolArgs) -> ToolResult:
        params = args.model_dump()
        done: list[str] = []
        found: list[dict[str, Any]] = []
        for number, step in enumerate(self.skill.composite, start=1):
            if step.expect is not None:  # the screen is read only by steps that look at it
                ref = ElementRef(**_fill(step.expect.model_dump(exclude_none=True), params))
                if find(ctx.screen or ctx.observe(), ref) is None:
                    raise ToolFailure(ErrorCode.action_failed, f"step {number}: expected {ref.model_dump(exclude_none=True)} on screen; after: {done}")
                done.append(f"checked {ref.model_dump(exclude_none=True)}")
                continue
            arguments = _fill(step.arguments, params)
            if isinstance(arguments.get("element"), dict):
                target = find(ctx.screen or ctx.observe(), ElementRef(**arguments["element"]))
                if target is None:
                    if step.optional:
                        done.append(f"skipped {step.tool} (no {arguments['element']})")
                        continue
                    raise ToolFailure(ErrorCode.element_not_found, f"step {number} ({step.tool}): no element {arguments['element']} on screen; after: {done}")
                arguments["element"] = target.id
            feedback = self._tools.execute(ToolCall(name=step.tool or "", arguments=arguments), ctx)
            if feedback.status is not FeedbackStatus.ok:
                code = feedback.error.code if feedback.error else ErrorCode.action_failed
                hint = feedback.error.hint if feedback.error else feedback.status.value
                if feedback.status is FeedbackStatus.blocked:
                    raise Blocked(f"step {number} ({step.tool}) was stopped by the safety gate: {hint}; after: {done}")
                raise ToolFailure(code, f"step {number} ({step.tool}) failed: {hint}; after: {done}")
            done.append(f"{step.tool} {arguments}")
            if feedback.result is not None:  # what a step found (a lookup's answer) reaches the planner
                found.append({"step": number, "tool": step.tool, "result": feedback.result})
        result: dict[str, Any] = {"skill": self.skill.name, "steps": done}
        if found:
            result["results"] = found
        # the screen after it, unless every step was a simulated service's (the phone did nothing)
        on_phone = any(step.tool is None or step.tool not in self._tools or not self._tools[step.tool].simulated
                       for step in self.skill.composite)
        return ToolResult(result=result, observe=on_phone)
