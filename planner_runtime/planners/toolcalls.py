"""Qwen/Hermes-style tool calls: render tool specs into the system prompt, parse model output.

The model writes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. Parsing never
raises: whatever cannot be read becomes a :class:`~planner_runtime.contract.ToolError` that the
harness turns into feedback the model can act on.

Model output is untrusted, so JSON is read here under limits, whichever backend wrote it: at
most :data:`MAX_OUTPUT_CHARS` of output, arguments nested at most :data:`MAX_DEPTH` deep, only
finite numbers that fit 64 bits (Python's ``json`` accepts ``NaN`` and ``Infinity`` and turns
``1e999`` into ``inf``), only valid Unicode (a lone surrogate such as ``"\\ud800"`` cannot be
encoded when the step is stored). :func:`guard_output` holds any planner's output to the same
limits, so one hostile turn is feedback, never an exception that ends an episode or a collection.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from planner_runtime.contract import ErrorCode, ToolCall, ToolError, ToolSpec, new_id
from planner_runtime.planners import PlannerOutput

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")

MAX_OUTPUT_CHARS = 256 * 1024  # one turn's output; long notes fit, a runaway or hostile reply does not
MAX_DEPTH = 32  # nesting of a call's arguments; tools take flat values
MAX_NAME_CHARS = 128
_INT_RANGE = 2**63  # SQLite's and most JSON readers' integers

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


# --- reading untrusted JSON ----------------------------------------------------------------------


@dataclass(frozen=True)
class BadNumber:
    """A number JSON cannot carry faithfully (NaN, ±Infinity, out of range), left where it was
    read so that :func:`check_value` can say where it is."""

    text: str


class UnreadableJson(ValueError):
    """Text that is not JSON, or JSON nested past what the decoder can take."""


class NestedTooDeep(UnreadableJson):
    """JSON nested past what the decoder can take: well-formed, perhaps, but unusable."""


def _parse_int(text: str) -> int | BadNumber:
    if len(text) > 20:  # before int(): Python refuses over 4300 digits with a ValueError of its own
        return BadNumber(f"{text[:12]}… ({len(text)} digits)")
    value = int(text)
    return value if -_INT_RANGE <= value < _INT_RANGE else BadNumber(text)


def _parse_float(text: str) -> float | BadNumber:
    value = float(text)
    return value if math.isfinite(value) else BadNumber(text[:24])


def loads(text: str) -> Any:
    """``text`` as JSON, with every unusable number read as a :class:`BadNumber`.

    Raises :class:`UnreadableJson`; a nesting too deep for the decoder is one too."""
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=BadNumber)
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:
        raise NestedTooDeep(f"nested too deep to read (arguments take at most {MAX_DEPTH} levels)") from None


def _where(path: tuple[str | int, ...]) -> str:
    return "arguments" + "".join(f"[{p}]" if isinstance(p, int) else f".{ascii(p)[1:-1][:40]}" for p in path)


def _finite(item: Any) -> bool:
    """False for a float or int no JSON reader takes as written (such as a planner's own NaN)."""
    if isinstance(item, float):
        return math.isfinite(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return -_INT_RANGE <= item < _INT_RANGE
    return True


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, max_chars: int = MAX_OUTPUT_CHARS) -> ToolError | None:
    """What makes ``value`` unfit to be a call's arguments, as the error the model gets; None if fit.

    Walks without recursion, so a structure of any depth is judged, not crashed on."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    chars = nodes = 0
    while stack:
        item, path = stack.pop()
        nodes += 1
        if len(path) > max_depth:
            return ToolError(code=ErrorCode.malformed_output, hint=f"arguments nest deeper than {max_depth} levels; tools take flat values")
        if isinstance(item, BadNumber) or not _finite(item):
            shown = item.text if isinstance(item, BadNumber) else repr(item)
            return ToolError(code=ErrorCode.invalid_arguments, hint=f"{_where(path)}: {shown} is not a usable number (NaN, Infinity and numbers beyond 64 bits are not); write a finite number")
        if isinstance(item, str):
            chars += len(item)
            if _SURROGATE.search(item):
                return ToolError(code=ErrorCode.invalid_arguments, hint=f"{_where(path)}: the text holds an unpaired surrogate (such as \\ud800); write valid Unicode")
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str) or _SURROGATE.search(key):
                    return ToolError(code=ErrorCode.invalid_arguments, hint=f"{_where(path)}: every key must be valid Unicode text")
                chars += len(key)
                stack.append((inner, path + (key,)))
        elif isinstance(item, list):
            stack.extend((inner, path + (i,)) for i, inner in enumerate(item))
        elif item is not None and not isinstance(item, (bool, int, float)):
            return ToolError(code=ErrorCode.invalid_arguments, hint=f"{_where(path)}: {type(item).__name__} is not a JSON value")
        if chars > max_chars or nodes > max_chars:
            return ToolError(code=ErrorCode.malformed_output, hint=f"arguments hold over {max_chars} characters of text; write shorter values")
    return None


def check_name(name: Any) -> ToolError | None:
    """What makes ``name`` unfit to be a tool name; None if fit."""
    if not isinstance(name, str) or not name:
        return ToolError(code=ErrorCode.malformed_output, hint='tool call must be an object with a string "name"')
    if len(name) > MAX_NAME_CHARS or _SURROGATE.search(name):
        shown = clean_text(name[:40]) + ("…" if len(name) > 40 else "")
        return ToolError(code=ErrorCode.unknown_tool, hint=f"{shown!r} is no tool's name; use a name from the tools list")
    return None


def read_arguments(name: str, args: Any, *, encoded: bool = True) -> tuple[dict[str, Any] | None, ToolError | None]:
    """A call's ``arguments`` as written: an object, or an object encoded as a JSON string.

    ``encoded``: a string is the arguments' encoding (the API's ``function.arguments``), so one
    that is not JSON is malformed; otherwise (a string inside a model's ``<tool_call>``) it may
    be double-encoded, and one that is not JSON is a string where an object belongs."""
    if isinstance(args, str):
        if len(args) > MAX_OUTPUT_CHARS:
            return None, ToolError(code=ErrorCode.malformed_output, hint=f"arguments of {name} are {len(args)} characters, over the {MAX_OUTPUT_CHARS} limit")
        try:
            args = loads(args) if args.strip() or not encoded else {}
        except UnreadableJson as exc:
            if encoded or isinstance(exc, NestedTooDeep):
                return None, ToolError(code=ErrorCode.malformed_output, hint=f"arguments of {name} are {exc}")
    if not isinstance(args, dict):
        return None, ToolError(code=ErrorCode.invalid_arguments, hint=f'arguments of {name} must be a JSON object, e.g. {{"element": 3}}')
    error = check_value(args)
    return (None, error) if error else (args, None)


def clean_text(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` fit to store and show: cut at ``limit`` characters, lone surrogates replaced."""
    if len(text) > limit:
        text = f"{text[:limit]}\n…[{len(text) - limit} more characters cut]"
    return _SURROGATE.sub("\ufffd", text)


# --- parsing model output ------------------------------------------------------------------------


def parse_tool_calls(text: str) -> tuple[list[ToolCall], list[ToolError]]:
    """Every tool call in ``text``, and an error for each block that is not one."""
    if len(text) > MAX_OUTPUT_CHARS:
        hint = f"the output is {len(text)} characters, over the {MAX_OUTPUT_CHARS} limit; answer with one short {OPEN}...{CLOSE}"
        return [], [ToolError(code=ErrorCode.malformed_output, hint=hint)]
    visible = _THINK.sub("", text)
    calls: list[ToolCall] = []
    errors: list[ToolError] = []
    blocks = _BLOCK.findall(visible)
    if not blocks:
        hint = "empty output" if not visible.strip() else "no <tool_call> block in the output"
        return [], [ToolError(code=ErrorCode.no_tool_call, hint=f"{hint}; answer with exactly one {OPEN}...{CLOSE}")]
    for raw in blocks:
        try:
            obj = loads(raw.strip())
        except UnreadableJson as exc:
            errors.append(ToolError(code=ErrorCode.malformed_output, hint=f"tool call is {exc}"))
            continue
        error = check_name(obj.get("name") if isinstance(obj, dict) else None)
        if error is None:
            args, error = read_arguments(obj["name"], obj.get("arguments", {}), encoded=False)
        if error is not None:
            errors.append(error)
            continue
        calls.append(ToolCall(name=obj["name"], arguments=args, call_id=new_id("call_")))
    return calls, errors


def guard_output(out: PlannerOutput) -> PlannerOutput:
    """``out`` held to the limits above, whichever planner made it: text cut and cleaned, each
    call that breaks a limit turned into an error. Returns ``out`` itself when it is fit."""
    text = clean_text(out.text)
    changed = text != out.text
    errors: list[ToolError] = []
    for error in out.errors:
        hint = clean_text(error.hint, 2000)
        changed |= hint != error.hint
        errors.append(error.model_copy(update={"hint": hint}) if hint != error.hint else error)
    calls: list[ToolCall] = []
    for call in out.tool_calls:
        error = check_name(call.name) or check_value(call.arguments)
        if error is not None:
            errors.append(error)
            changed = True
            continue
        if len(call.call_id) > MAX_NAME_CHARS or _SURROGATE.search(call.call_id):  # it is echoed back to the server
            call = call.model_copy(update={"call_id": new_id("call_")})
            changed = True
        calls.append(call)
    if not changed:
        return out
    return out.model_copy(update={"text": text, "tool_calls": tuple(calls), "errors": tuple(errors)})
