"""Tool parameter schemas as the server takes them: checked before decoding, closed for the grammar.

A request's tool schemas are checked with llguidance's own JSON-schema compiler (no tokenizer
needed), so a schema the grammar could not follow is refused with its reason, not decoded
unconstrained. :func:`closed` gives the schema the grammar enforces: every object schema that
does not say otherwise gets ``additionalProperties: false``, which is what users of tool calling
expect (and what vLLM's strict JSON grammars do); the schema the model reads in its prompt stays
as the client sent it.
"""

from __future__ import annotations

import re
from typing import Any

from planner_runtime.contract import ToolSpec

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the API's rule for function names

# Keywords that let an object hold properties its ``properties`` do not name, or that combine
# schemas: closing an object that has one of them would change what it means.
_OPEN_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "$ref", "if")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "if", "then", "else", "contains", "additionalItems")


def schema_error(schema: Any) -> str | None:
    """Why ``schema`` cannot be a tool's parameters, or ``None`` if it can."""
    if not isinstance(schema, dict):
        return "must be a JSON schema object"
    if schema.get("type", "object") != "object":
        return f'must describe an object ("type": "object"), not {schema.get("type")!r}'
    from llguidance import LLMatcher

    try:
        grammar = LLMatcher.grammar_from_json_schema(schema)
    except (ValueError, TypeError, RuntimeError) as exc:
        return f"is not a valid JSON schema: {exc}"
    problem = LLMatcher.validate_grammar(grammar)
    return f"is not a valid JSON schema: {problem}" if problem else None


def closed(schema: Any, *, close_self: bool = True) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object schema that allows no
    extras of its own accord (``allOf`` parts are left open: each sees only its own properties)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(sub) for name, sub in out[key].items()}
    is_object = out.get("type") == "object" or (out.get("type") is None and "properties" in out)
    # Alternatives of a whole schema are closed like it; parts that add to an object's own
    # properties (its ``allOf``, or ``anyOf`` beside its ``properties``) must stay open.
    whole = not (is_object and "properties" in out)
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed(sub, close_self=whole or key == "prefixItems") for sub in out[key]]
    if isinstance(out.get("allOf"), list):
        out["allOf"] = [closed(sub, close_self=False) for sub in out["allOf"]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = closed(out[key], close_self=key not in ("not", "if", "then", "else"))
    if close_self and is_object and not any(k in out for k in _OPEN_KEYWORDS):
        out["additionalProperties"] = False
    return out


def closed_tools(tools: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """``tools`` with :func:`closed` parameter schemas: what their calls are constrained to."""
    return tuple(t.model_copy(update={"parameters": closed(t.parameters)}) for t in tools)
