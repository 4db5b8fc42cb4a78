"""The tool declaration: typed arguments whose JSON schema is what the planner sees, and ``run``.

A tool declares a pydantic ``Args`` model and ``run`` returns a :class:`ToolResult` or raises
:class:`~planner_runtime.harness.tools.errors.ToolFailure` for a mistake the planner can fix.
A tool that works through one catalogue app is an :class:`AppTool`: the funnel resolves that
app's package on the phone (answering ``app_not_installed`` where there is none) and hands it
to :meth:`AppTool.act`, so no tool repeats the lookup.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from planner_runtime.contract import ToolSpec
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools.context import ToolContext


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NoArgs(ToolArgs):
    pass


@dataclass(frozen=True)
class ToolResult:
    result: Any = None
    observe: bool = False  # attach the screen after the action
    screenshot: str | None = None  # an artifact reference for the attached observation


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
    # A simulated service's tool (harness.tools.simulated): ``app`` names its family, and it is
    # offered only in an episode with a world, to a goal that bears on that family.
    simulated: ClassVar[bool] = False

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=_parameters(self.Args))

    def target(self, ctx: ToolContext, args: Any) -> dict[str, Any]:
        """What a call with ``args`` acts on, for telling two calls apart (the repeat guard): the
        validated arguments, unless the tool resolves them (a contact's name to a number)."""
        return args.model_dump(mode="json")

    def run(self, ctx: ToolContext, args: Any) -> ToolResult:
        raise NotImplementedError

    def invoke(self, ctx: ToolContext, args: Any, package: str | None) -> ToolResult:
        """How the funnel runs the tool, with its app's installed package (None: no app)."""
        return self.run(ctx, args)


class AppTool(Tool):
    """A tool that needs its catalogue app installed; subclasses implement :meth:`act`."""

    app: ClassVar[str]

    def invoke(self, ctx: ToolContext, args: Any, package: str | None) -> ToolResult:
        if package is None:  # the funnel answers a missing app before this
            raise RuntimeError(f"{self.name} needs the {self.app} app's package")
        return self.act(ctx, args, package)

    def act(self, ctx: ToolContext, args: Any, package: str) -> ToolResult:
        """Do the action through ``package``, the installed package of :attr:`app`."""
        raise NotImplementedError
