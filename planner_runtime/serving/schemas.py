"""Tool definitions as the server takes them: the API's rule for names, schemas checked before decoding.

A request's tool schemas are checked with llguidance's own JSON-schema compiler (no tokenizer
needed), so a schema the grammar could not follow is refused with its reason, not decoded
unconstrained. The schema the grammar then enforces is the closed one
(:func:`planner_runtime.planners.local.grammar.closed`).
"""

from __future__ import annotations

import re
from typing import Any

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the API's rule for function names


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
