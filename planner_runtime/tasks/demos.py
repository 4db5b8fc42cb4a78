"""A task's demonstration: a reference solution as tool calls, data for training, never its verdict.

A task may carry a ``demo``: the calls a planner that knows the answer would make, templated with
the task's parameters like its goal and checks. ``collect --planner demo`` plays it on the sandbox
and the task's own checks judge the episode, so a demo that stops solving its task (an app
changed, a check grew stricter) fails like any planner would and yields no training data.

A string argument that is exactly one placeholder (``"{hour}"``) takes the parameter's value as
it is, number or text, so ``set_alarm`` gets ``hour: 7`` and not ``"7"``; any other string is
rendered as text. Loading a task checks its demo with every parameter set it can be given
(:func:`~planner_runtime.tasks.templates.value_sets`): each call names a tool an episode can offer
and its arguments pass that tool's schema, as :meth:`ToolSet.execute` would judge them, and the
demo ends with ``finish``.
"""

from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, Field, ValidationError

from planner_runtime.contract import ToolCall
from planner_runtime.tasks.declarations import SpecModel
from planner_runtime.tasks.templates import FieldProblem, Loc, Templated, value_sets

_WHOLE = re.compile(r"\{([A-Za-z_]\w*)\}\Z")
_RENDER_ERRORS = (KeyError, IndexError, ValueError, AttributeError, TypeError)


class DemoCall(SpecModel):
    """One call of a demo: a tool's name and its arguments (strings are templates)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


def fill(value: Any, values: Mapping[str, Any]) -> Any:
    """``value`` with the parameters filled in: ``"{p}"`` alone keeps ``p``'s type, any other
    string is ``str.format``-ed, lists and mappings are filled item by item."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole is not None:
            return values[whole.group(1)]
        return value.format(**values)
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    return value


def render_demo(demo: Sequence[DemoCall], values: Mapping[str, Any]) -> list[ToolCall]:
    """The demo's calls as a planner writes them, for a task with parameters ``values``."""
    return [ToolCall(name=call.name, arguments=fill(call.arguments, values)) for call in demo]


def tool_schemas() -> Mapping[str, type[BaseModel]]:
    """Every tool an episode can offer, by name, with its arguments model: the default tools,
    the per-episode ones (user, screenshot, memory, sub-agents) and the installed skills'
    composites. Imports every tool module, once."""
    from planner_runtime.harness.skills import default_skills_dir

    return _tool_schemas(default_skills_dir())


@functools.cache
def _tool_schemas(skills_dir: Path) -> Mapping[str, type[BaseModel]]:
    from planner_runtime.harness.skills import load_skills
    from planner_runtime.harness.subagents import Delegate
    from planner_runtime.harness.toolbox import default_toolset, with_skills
    from planner_runtime.harness.tools.core import AskUser
    from planner_runtime.harness.tools.memory import Recall, Remember
    from planner_runtime.harness.tools.screenshot import Screenshot

    from planner_runtime.harness.tools.simulated.tool import simulated_tools

    tools = {t.name: t.Args for t in with_skills(default_toolset(), load_skills(skills_dir), simulated_tools())}
    return tools | {cls.name: cls.Args for cls in (AskUser, Screenshot, Remember, Recall, Delegate)}


def _schema_problem(call: ToolCall, schemas: Mapping[str, type[BaseModel]]) -> tuple[Loc, str] | None:
    try:
        schemas[call.name].model_validate(call.arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = tuple(str(p) for p in first["loc"])
        return ("arguments", *where[:1]), f"{call.name}: {'.'.join(where) or 'arguments'}: {first['msg']}"
    return None


def check_demo(task: Templated, demo: Sequence[DemoCall]) -> None:
    """Raise :class:`FieldProblem` at the first call of ``demo`` that does not render, names no
    tool, or whose arguments the tool refuses, with any of ``task``'s parameter sets."""
    if not demo:
        return
    if demo[-1].name != "finish":
        raise FieldProblem(("demo", len(demo) - 1, "name"), "a demo ends with a finish call (its answer is part of the solution)")
    schemas = tool_schemas()
    for i, call in enumerate(demo):
        if call.name not in schemas:
            close = difflib.get_close_matches(call.name, list(schemas), n=1)
            raise FieldProblem(("demo", i, "name"), f"no tool named {call.name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    for label, values in value_sets(task):
        for i, call in enumerate(demo):
            try:
                rendered = ToolCall(name=call.name, arguments=fill(call.arguments, values))
            except _RENDER_ERRORS as exc:
                why = f"no parameter {exc}" if isinstance(exc, KeyError) else str(exc)
                raise FieldProblem(("demo", i, "arguments"), f"template does not render with {label}: {why}") from None
            problem = _schema_problem(rendered, schemas)
            if problem is not None:
                loc, message = problem
                raise FieldProblem(("demo", i, *loc), f"{message} (with {label})")
