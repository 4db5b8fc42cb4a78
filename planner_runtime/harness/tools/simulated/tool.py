"""Each declared simulated tool as a :class:`~planner_runtime.harness.tools.Tool`, and the
catalogue of every family shipped under ``families/``.

A simulated tool groups with its family the way an app tool groups with its app (``app`` is
the family's name; it needs nothing installed), so the toolbox offers a family's tools only to
goals that bear on it and prompts do not grow with the catalogue. Its ``Args`` model is made
from the declared ``params``, so the funnel validates a call before it runs; it runs only in an
episode that has a world (a task's episode), never on a free-form goal, where its answers
would be made up.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, create_model

from planner_runtime.contract import ErrorCode
from planner_runtime.errors import TaskSpecError
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.simulated.family import FAMILIES_DIR, Family, Kind, Param, ToolDecl, family_problems
from planner_runtime.harness.tools.simulated.world import World

_TYPES: dict[Kind, type] = {Kind.string: str, Kind.integer: int, Kind.number: float, Kind.boolean: bool}


def _field(param: Param) -> tuple[Any, Any]:
    kind: Any = Literal[param.enum] if param.enum else _TYPES[param.type]  # type: ignore[valid-type]
    bounds = {k: v for k, v in (("ge", param.minimum), ("le", param.maximum)) if v is not None}
    if param.type is Kind.string and not param.enum and param.required:
        bounds["min_length"] = 1
    if not param.required:
        return kind | None, Field(default=param.default, description=param.description, **bounds)
    return kind, Field(description=param.description, **bounds)


def args_model(decl: ToolDecl) -> type[ToolArgs]:
    fields = {name: _field(p) for name, p in decl.params.items()}
    return create_model(f"{decl.name}_args", __base__=ToolArgs, **fields)  # type: ignore[call-overload]


class SimTool(Tool):
    """One tool of a simulated family, run against the episode's world."""

    simulated = True
    needs_app = False

    def __init__(self, family: Family, decl: ToolDecl) -> None:
        self.family, self.decl = family, decl
        self.name = decl.name  # type: ignore[misc]
        self.description = decl.description  # type: ignore[misc]
        self.app = family.family  # type: ignore[misc]
        self.sensitive = decl.sensitive  # type: ignore[misc]
        self.Args = _args(family.family, decl.name)  # type: ignore[misc]

    def run(self, ctx: ToolContext, args: ToolArgs) -> ToolResult:
        world = ctx.world
        if not isinstance(world, World):
            raise ToolFailure(ErrorCode.action_failed, f"{self.family.title} is a simulated service and this episode has no simulated world")
        result = world.run(self.family, self.decl, args.model_dump())
        if world.simulator is not None:
            result = world.simulator.respond(world, self.family, self.decl, args.model_dump(), result)
        return ToolResult(result=result)


@functools.cache
def _args(family: str, tool: str) -> type[ToolArgs]:
    fam = families()[family]
    return args_model(next(t for t in fam.tools if t.name == tool))


@functools.cache
def families(directory: Path = FAMILIES_DIR) -> dict[str, Family]:
    """Every family in ``directory`` by name; a broken file or a tool named twice raises
    :class:`TaskSpecError` naming the file, line and field (the shipped ones are tested)."""
    found: dict[str, Family] = {}
    tools: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        family, problems = family_problems(path)
        if problems:
            raise problems[0]
        assert family is not None
        if family.family in found:
            raise TaskSpecError(str(path), None, "family", f"family {family.family!r} is declared twice")
        for tool in family.tools:
            if tool.name in tools:
                raise TaskSpecError(str(path), None, "tools", f"tool {tool.name!r} is declared by family {tools[tool.name]} too")
            tools[tool.name] = family.family
        found[family.family] = family
    return found


def simulated_tools() -> list[Tool]:
    """A tool for every declared tool of every family, in file order."""
    return [SimTool(f, d) for f in families().values() for d in f.tools]


def find_family(name: str) -> Family | None:
    return families().get(name)


def fresh_world() -> World:
    """The world an episode starts from: every family's declared rows."""
    return World.fresh(families())
