"""Tool framework: typed arguments, JSON schemas for the planner, and one Feedback per call.

A tool declares a pydantic ``Args`` model (its schema is what the planner sees), and ``run``
returns a :class:`ToolResult` or raises :class:`ToolFailure` for a mistake the planner can fix.
:meth:`ToolSet.execute` turns every outcome — unknown tool, bad arguments, a missing element,
an app that is not installed — into :class:`~planner_runtime.contract.Feedback`. Only faults of
the device itself (``DeviceError.infra``) propagate, so the episode loop can end as infra.

It is also the one funnel of the safety gate: a tool's declared ``sensitive`` category is
decided before it runs, and every effect it then has on the phone is judged as the tool's doing
(:mod:`planner_runtime.harness.tools.guard`), whichever route it takes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError

from device_farm import Device
from device_farm.android import installed_packages
from device_farm.errors import DeviceError
from device_farm.hierarchy import Screen, diff_screens, parse_hierarchy
from planner_runtime.contract import ErrorCode, Feedback, FeedbackStatus, Observation, ToolCall, ToolError, ToolSpec
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.device_errors import device_feedback
from planner_runtime.harness.safety import SafetyGate, Sensitivity
from planner_runtime.harness.tools.guard import GuardedDevice


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NoArgs(ToolArgs):
    pass


class ToolFailure(PlannerRuntimeError):
    """A failure the planner caused and can act on (wrong element, app missing...); the
    tool set turns it into feedback, so it never leaves a tool call."""

    status = FeedbackStatus.error

    def __init__(self, code: ErrorCode, hint: str) -> None:
        super().__init__(hint)
        self.code, self.hint = code, hint


class Blocked(ToolFailure):
    """The safety gate stopped an action inside a tool (e.g. a tap on a Send button)."""

    status = FeedbackStatus.blocked

    def __init__(self, hint: str) -> None:
        super().__init__(ErrorCode.unsafe_action, hint)


@dataclass(frozen=True)
class ToolResult:
    result: Any = None
    observe: bool = False  # attach the screen after the action
    screenshot: str | None = None  # an artifact reference for the attached observation


@dataclass
class ToolContext:
    """What tools act on: the device, and the last screen the planner saw."""

    device: Device
    gate: SafetyGate = field(default_factory=SafetyGate)  # deny sensitive actions unless told otherwise
    screen: Screen | None = None
    screen_chars: int = 3000
    _installed: set[str] | None = field(default=None, repr=False)
    _shown: Screen | None = field(default=None, repr=False)  # the last screen put in front of the planner

    def __post_init__(self) -> None:
        # tools act through the guard; a context made from another one's device (a sub-agent's)
        # gets its own guard over the same phone
        inner = self.device.inner if isinstance(self.device, GuardedDevice) else self.device
        self.device = GuardedDevice(inner, self)

    def observe(self) -> Screen:
        self.screen = parse_hierarchy(self.device.dump_hierarchy())
        return self.screen

    def observation(self) -> Observation:
        """The current screen as the planner will see it, with what changed since it last saw one."""
        screen = self.screen or self.observe()
        shown, self._shown = self._shown, screen
        if shown is None:
            changes = ""
        else:
            changes = "\n".join(diff_screens(shown, screen)) or "(no change)"
        return Observation(package=screen.package, screen=screen.to_text(self.screen_chars), digest=screen.digest, changes=changes)

    def installed(self, refresh: bool = False) -> set[str]:
        if self._installed is None or refresh:
            self._installed = installed_packages(self.device)
        return self._installed


def _strip_titles(schema: Any) -> Any:
    """Pydantic adds a ``title`` to every field; the planner's prompt is better without them."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=512)
def _parameters(args: type[ToolArgs]) -> dict[str, Any]:
    """The JSON schema of an Args model, built once per model (tools are made per episode)."""
    return _strip_titles(args.model_json_schema())


class Tool:
    """Base class: subclasses set ``name``, ``description``, ``Args`` and implement ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[ToolArgs]] = NoArgs
    terminal: ClassVar[bool] = False  # ends the episode when it succeeds
    sensitive: ClassVar[Sensitivity | None] = None  # runs only past the safety gate
    # The catalogue app (harness.apps) the tool works through: offered only where it is
    # installed, and chosen with that app's other tools when the goal bears on it. None: a
    # tool for any screen or app (GUI, finish), always offered.
    app: ClassVar[str | None] = None
    needs_app: ClassVar[bool] = True  # False: grouped with ``app`` but works without it installed

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=_parameters(self.Args))

    def target(self, ctx: ToolContext, args: Any) -> dict[str, Any]:
        """What a call with ``args`` acts on, for telling two calls apart (the repeat guard): the
        validated arguments, unless the tool resolves them (a contact's name to a number)."""
        return args.model_dump(mode="json")

    def run(self, ctx: ToolContext, args: Any) -> ToolResult:
        raise NotImplementedError


def _validation_hint(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


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
        return [t.spec() for t in self._tools.values()]

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
                outcome = tool.run(ctx, args)
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

