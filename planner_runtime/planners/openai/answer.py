"""Reading an OpenAI-compatible chat-completions answer into a :class:`PlannerOutput`.

The answer carries what a model wrote, so it is read as untrusted input under the limits of
:mod:`planner_runtime.planners.toolcalls`: ``function.arguments`` (a JSON string, or an object
as some servers send it) nested 10,000 deep, holding ``NaN``, a lone surrogate or a megabyte of
text becomes a :class:`~planner_runtime.contract.ToolError` the model gets as feedback, and the
text kept for the trajectory is cut and cleaned. A body that is not JSON at all is no model's
doing — a proxy's error page, a server that is not an OpenAI endpoint — and raises
:class:`~planner_runtime.planners.PlannerUnavailable`.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from planner_runtime.contract import ErrorCode, ToolCall, ToolError, Usage, new_id
from planner_runtime.planners import PlannerOutput, PlannerUnavailable
from planner_runtime.planners.openai.tokens import TokenReading, read_tokens
from planner_runtime.planners.toolcalls import (
    CLOSE,
    MAX_NAME_CHARS,
    OPEN,
    BadNumber,
    NestedTooDeep,
    UnreadableJson,
    check_name,
    clean_text,
    format_tool_call,
    loads,
    parse_tool_calls,
    read_arguments,
)


TokenProblem = Callable[[TokenReading], None]


def read_body(
    raw: bytes, *, limit: int, server: str, tokenizer: str | None = None, on_token_problem: TokenProblem | None = None
) -> PlannerOutput:
    """The body of a 2xx answer (``limit`` + 1 bytes of it at most) as a planner's output; with
    ``tokenizer``, its token record too (see :func:`read_answer`)."""
    if len(raw) > limit:
        return _failed(f"the server's answer is over {limit} bytes; answer with one short tool call")
    # JSON is UTF-8 (RFC 8259); bytes that are not become U+FFFD rather than an exception.
    text = raw.decode("utf-8", errors="replace")
    try:
        payload = loads(text)
    except NestedTooDeep as exc:  # well-formed so far: what the model wrote, nested past reading
        return _failed(f"the answer is {exc}")
    except UnreadableJson as exc:
        raise PlannerUnavailable(f"{server}: the answer is not JSON ({exc}): {clean_text(text[:200])!r}") from None
    return read_answer(payload, tokenizer=tokenizer, on_token_problem=on_token_problem)


def read_answer(payload: Any, *, tokenizer: str | None = None, on_token_problem: TokenProblem | None = None) -> PlannerOutput:
    """A decoded chat-completions answer as a :class:`PlannerOutput`; never raises.

    With ``tokenizer`` (the name the ids' vocabulary goes by), the answer's token ids, logprobs
    and sampled mask become ``tokens`` (:mod:`.tokens`); when they are missing or do not add up
    the output has none and ``on_token_problem`` is told why."""
    out = _read_answer(payload)
    if tokenizer is None or not isinstance(payload, dict):
        return out
    choices = payload.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    reading = read_tokens(payload, choice, tokenizer=tokenizer)
    if reading.problem and on_token_problem is not None:
        on_token_problem(reading)
    return out.model_copy(update={"tokens": reading.tokens}) if reading.tokens is not None else out


def _read_answer(payload: Any) -> PlannerOutput:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    usage_raw = payload.get("usage") if isinstance(payload, dict) and isinstance(payload.get("usage"), dict) else {}
    usage = Usage(prompt_tokens=_count(usage_raw.get("prompt_tokens")), completion_tokens=_count(usage_raw.get("completion_tokens")))
    content = text_of(message.get("content"))
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        content = f"<think>{reasoning}</think>" + content
    # "length": the token budget ended the answer, so a call in it that parses was closed early
    cut = choice.get("finish_reason") == "length"
    raw_calls = message.get("tool_calls")
    if not isinstance(raw_calls, list) or not raw_calls:
        if not choice:
            return _failed("the server's answer held no choices", usage)
        calls, errors = parse_tool_calls(content)  # servers without a tool parser answer in text
        return PlannerOutput(text=clean_text(content), tool_calls=tuple(calls), errors=tuple(errors), usage=usage, cut=cut)
    calls_out: list[ToolCall] = []
    errors_out: list[ToolError] = []
    blocks: list[str] = []
    for raw in raw_calls:
        call, error, text = _call_from_api(raw)
        if call is not None:
            calls_out.append(call)
        if error is not None:
            errors_out.append(error)
        if text:
            blocks.append(text)
    text = "\n".join(part for part in [content.strip(), *blocks] if part)
    return PlannerOutput(text=clean_text(text), tool_calls=tuple(calls_out), errors=tuple(errors_out), usage=usage, cut=cut)


def _failed(hint: str, usage: Usage = Usage()) -> PlannerOutput:
    return PlannerOutput(text="", errors=(ToolError(code=ErrorCode.malformed_output, hint=hint),), usage=usage)


def text_of(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _call_id(value: Any) -> str:
    """The server's call id when it is one we can echo back, else a fresh one."""
    if isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS and clean_text(value) == value:
        return value
    return new_id("call_")


def _as_written(args: Any) -> str:
    """Object arguments back as JSON text for the trajectory, as far as they can be written."""
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False, default=lambda v: v.text if isinstance(v, BadNumber) else repr(v))
    except (RecursionError, ValueError):
        return '"(arguments nested too deep to show)"'


def _call_from_api(raw: Any) -> tuple[ToolCall | None, ToolError | None, str]:
    """One API tool call → (call, error, its text as a ``<tool_call>`` block)."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    error = check_name(name)
    if error is not None:
        hint = "tool call without a function name" if not isinstance(name, str) or not name else error.hint
        return None, error.model_copy(update={"hint": hint}), ""
    args, error = read_arguments(name, fn.get("arguments", {}))
    if error is not None:
        text = f'{OPEN}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {_as_written(fn.get("arguments", {}))}}}\n{CLOSE}'
        return None, error, text
    call = ToolCall(name=name, arguments=args, call_id=_call_id(raw.get("id")))
    return call, None, format_tool_call(call)
