"""Tool framework and its one funnel: :meth:`ToolSet.execute` runs every call and gives one Feedback.

Tools are declared in :mod:`~planner_runtime.harness.tools.base` (typed ``Args``, ``run``), one
module per catalogue app plus the general ones (:mod:`.gui`, :mod:`.core`), found by name through
:mod:`~planner_runtime.harness.tools.registry`. The funnel turns every outcome — unknown tool,
bad arguments, a missing element, an app that is not installed — into
:class:`~planner_runtime.contract.Feedback`. Only faults of the device itself
(``DeviceError.infra``) propagate, so the episode loop can end as infra.

It is also the one funnel of the safety gate: a tool's declared ``sensitive`` category is
decided before it runs, and every effect it then has on the phone is judged as the tool's doing
(:mod:`planner_runtime.harness.tools.guard`), whichever route it takes. And it resolves an app
tool's package once, so each tool gets the installed package of its app.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from pydantic import ValidationError

from device_farm.errors import DeviceError
from planner_runtime.contract import ErrorCode, Feedback, FeedbackStatus, ToolCall, ToolError, ToolSpec
from planner_runtime.harness.apps import resolve_package
from planner_runtime.harness.device_errors import device_feedback
from planner_runtime.harness.tools.base import AppTool, NoArgs, Tool, ToolArgs, ToolResult
from planner_runtime.harness.tools.context import ToolContext
from planner_runtime.harness.tools.errors import Blocked, ToolFailure
from planner_runtime.harness.tools.guard import GuardedDevice

__all__ = ["AppTool", "Blocked", "NoArgs", "Tool", "ToolArgs", "ToolContext", "ToolFailure", "ToolResult", "ToolSet"]


def _validation_hint(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def app_package(tool: Tool, ctx: ToolContext) -> str | None:
    """The installed package of the app ``tool`` needs (None for a tool that needs none); a
    missing app is the planner's mistake (it named a tool this phone cannot serve)."""
    if tool.app is None or not tool.needs_app:
        return None
    package = resolve_package(tool.app, ctx.installed())
    if package is None:
        raise ToolFailure(ErrorCode.app_not_installed, f"no {tool.app} app is installed on this phone")
    return package


class ToolSet:
    """The tools offered in one episode, by name."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {t.name: t for t in tools}

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[Tool]:
        """The tools, in the order they are offered."""
        return iter(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the planner is told of each tool: its spec, with the description the harness
        revision in use gives it where it gives one."""
        from planner_runtime.harness.revision import current

        described = current().tool_descriptions
        specs = [t.spec() for t in self._tools.values()]
        if not described:
            return specs
        return [s.model_copy(update={"description": described[s.name]}) if s.name in described else s for s in specs]

    def execute(self, call: ToolCall, ctx: ToolContext) -> Feedback:
        """Run ``call``; every planner-side mistake becomes error feedback, infra faults raise."""
        tool = self._tools.get(call.name)
        if tool is None:
            return Feedback.fail(call.call_id, ErrorCode.unknown_tool, f"no tool named {call.name!r}; available: {', '.join(self._tools)}")
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError as exc:
            return Feedback.fail(call.call_id, ErrorCode.invalid_arguments, _validation_hint(exc))
        arguments = args.model_dump()
        if tool.sensitive is not None:
            decision = ctx.gate.decide(tool.name, tool.sensitive, arguments, f"{tool.name} ({tool.sensitive.value})")
            if not decision.allowed:
                return Feedback(
                    call_id=call.call_id,
                    status=FeedbackStatus.blocked,
                    error=ToolError(code=ErrorCode.unsafe_action, hint=f"{tool.name} was not run: {decision.reason}"),
                )
            note = decision.reason  # recorded, so checks like "asked before paying" can see it
        else:
            note = ""
        if not isinstance(ctx.device, GuardedDevice):  # a device swapped in after the context was made
            ctx.device = GuardedDevice(ctx.device, ctx)
        guard = ctx.device
        try:
            with guard.acting_as(tool.name, arguments, tool.sensitive):
                # inside the scope, as each tool's own lookup was: listing packages is judged too
                outcome = tool.invoke(ctx, args, app_package(tool, ctx))
            observation = ctx.observation() if outcome.observe else None
            if observation is not None and outcome.screenshot is not None:
                observation = observation.model_copy(update={"screenshot": outcome.screenshot})
        except ToolFailure as exc:
            return Feedback(call_id=call.call_id, status=exc.status, error=ToolError(code=exc.code, hint=exc.hint))
        except DeviceError as exc:
            if exc.infra:
                raise
            return device_feedback(call.call_id, exc)
        return Feedback(call_id=call.call_id, status=FeedbackStatus.ok, result=outcome.result, observation=observation, note=note)
