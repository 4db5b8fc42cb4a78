"""Qwen/Hermes-style tool calls: render tool specs into the system prompt, parse model output.

The model writes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. Parsing never
raises: whatever cannot be read becomes a :class:`~planner_runtime.contract.ToolError` that the
harness turns into feedback the model can act on.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from planner_runtime.contract import ErrorCode, ToolCall, ToolError, ToolSpec, new_id

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)

TOOLS_PREAMBLE = (
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def render_tools(tools: Sequence[ToolSpec]) -> str:
    """The tools block of the system prompt, one JSON function signature per line."""
    lines = [
        json.dumps(
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}},
            ensure_ascii=False,
        )
        for t in tools
    ]
    return TOOLS_PREAMBLE + "\n".join(lines) + TOOLS_POSTAMBLE


def format_tool_call(call: ToolCall) -> str:
    """The text a model writes for ``call``."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{OPEN}\n{body}\n{CLOSE}"


def parse_tool_calls(text: str) -> tuple[list[ToolCall], list[ToolError]]:
    """Every tool call in ``text``, and an error for each block that is not one."""
    visible = _THINK.sub("", text)
    calls: list[ToolCall] = []
    errors: list[ToolError] = []
    blocks = _BLOCK.findall(visible)
    if not blocks:
        hint = "empty output" if not visible.strip() else "no <tool_call> block in the output"
        return [], [ToolError(code=ErrorCode.no_tool_call, hint=f"{hint}; answer with exactly one {OPEN}...{CLOSE}")]
    for raw in blocks:
        body = raw.strip()
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as exc:
            errors.append(ToolError(code=ErrorCode.malformed_output, hint=f"tool call is not valid JSON ({exc.msg} at char {exc.pos})"))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            errors.append(ToolError(code=ErrorCode.malformed_output, hint='tool call must be an object with a string "name"'))
            continue
        args = obj.get("arguments", {})
        if isinstance(args, str):  # some models double-encode the arguments
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        if not isinstance(args, dict):
            errors.append(ToolError(code=ErrorCode.invalid_arguments, hint='"arguments" must be a JSON object'))
            continue
        calls.append(ToolCall(name=obj["name"], arguments=args, call_id=new_id("call_")))
    return calls, errors
