"""How the tool list is written into the system turn: the renderings a model can be trained on.

``json`` is what Qwen2.5's chat template writes (one JSON function signature per line, with every
parameter's description): what an untrained model understands best, and about 170 tokens a tool.
``compact`` writes each tool as one signature line, ``set_alarm(hour: integer 0..23, minute:
integer 0..59, label?: string) - Set an alarm.``, about a fifth of that: a model trained on it
reads a step's prompt several times faster and trains on several times fewer tokens. Both ask for
the same ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` answer, so parsing and the
constrained decoding grammar (which holds every argument to its full schema) are the same.

A release records the rendering it was trained on
(:func:`~planner_runtime.planners.chat_template.rendering_id`), its model folder names it in
:data:`RENDERING_FILE`, and the planner that loads the folder renders the same way; a model
folder without that file (the untrained model, any HF model) gets ``json``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from planner_runtime.contract import ToolSpec
from planner_runtime.planners.toolcalls import render_tools

DEFAULT = "json"
RENDERING_FILE = "planner-agent-rendering.txt"  # in a model folder: the rendering it was trained on

COMPACT_PREAMBLE = (
    "Call exactly one tool per turn, written as\n"
    '<tool_call>\n{"name": <tool>, "arguments": {<argument>: <value>, ...}}\n</tool_call>\n'
    "An argument marked ? may be left out.\n\n"
)


class UnknownRendering(ValueError):
    """A rendering name or id this version does not know."""


def _type(schema: Any) -> str:
    """A parameter's type in a few tokens: ``integer 0..23``, ``"up"|"down"``, ``list[string]``."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "anyOf" in schema:
        return "|".join(_type(s) for s in schema["anyOf"] if isinstance(s, dict))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"list[{_type(schema.get('items'))}]"
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{kind} {low}..{high}"
        if low is not None or high is not None:
            return f"{kind} {'>=' if low is not None else '<='}{low if low is not None else high}"
    return str(kind)


def _signature(tool: ToolSpec) -> str:
    params = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = set(params.get("required") or ())
    args = [f"{name}{'' if name in required else '?'}: {_type(schema)}" for name, schema in properties.items()]
    return f"{tool.name}({', '.join(args)}) - {tool.description}"


def render_tools_compact(tools: Sequence[ToolSpec]) -> str:
    """The tools block as one signature line a tool."""
    return COMPACT_PREAMBLE + "\n".join(_signature(t) for t in tools)


RENDERINGS: dict[str, Callable[[Sequence[ToolSpec]], str]] = {"json": render_tools, "compact": render_tools_compact}
# the prefix of each rendering's id in a release manifest (``json`` kept the id it had before there were two)
ID_PREFIX = {"json": "chatml-tools", "compact": "chatml-compact"}


def tools_block(tools: Sequence[ToolSpec], rendering: str = DEFAULT) -> str:
    try:
        render = RENDERINGS[rendering]
    except KeyError:
        raise UnknownRendering(f"prompt rendering {rendering!r}: this version knows {', '.join(RENDERINGS)}") from None
    return render(tools)
