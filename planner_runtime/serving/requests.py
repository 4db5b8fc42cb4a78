"""Reading a chat-completions request strictly: the body's JSON, then each field the API defines.

Whatever a client sends that the server cannot honour exactly is refused with a
:class:`RequestError` (a 4xx status, the parameter at fault and a message in the API's words)
before anything reaches the model: JSON with NaN or Infinity, lone surrogates or more than
:data:`MAX_DEPTH` levels of nesting; a ``max_tokens`` that is not a positive integer; tool
schemas llguidance cannot compile; options such as ``n > 1`` or ``stop`` that this server does
not implement. Fields the API defines but that do not change a greedy answer (``user``,
``presence_penalty`` at 0, ``parallel_tool_calls``) are accepted; unknown fields are ignored, as
vLLM does, so newer clients keep working.

``logprobs: true`` (with ``top_logprobs`` absent or 0) and the extension ``return_token_ids: true``
(vLLM's name) ask for the answer's token record; both need a planner that gives one (the local
model) and a request without ``stream``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from planner_runtime.contract import ToolSpec
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.planners import Sampling
from planner_runtime.planners.local.batch import PlanRequest
from planner_runtime.serving.schemas import TOOL_NAME, schema_error
from planner_runtime.planners.openai.wire import openai_to_messages

MAX_DEPTH = 64  # nesting levels a body may have (tool schemas need a handful)
DEFAULT_MAX_TOKENS = 128
_ROLES = ("system", "developer", "user", "assistant", "tool")


class RequestError(PlannerRuntimeError):
    """A request the server refuses: the HTTP status, the API's error code and the field at fault."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


class ClientGone(Exception):
    """The client disconnected while its request was decoding."""


@dataclass(frozen=True)
class ChatRequest:
    """A checked request: what to decode and how to answer it."""

    plan: PlanRequest
    model: str  # the model id the client asked for, echoed in the answer
    stream: bool = False
    include_usage: bool = False  # stream_options.include_usage: a last chunk with the usage
    tool_choice: str = "auto"  # auto, required, none, or "function" for a named one
    logprobs: bool = False  # choices[0].logprobs.content, one entry per completion token
    return_token_ids: bool = False  # choices[0] carries prompt_token_ids, token_ids and sampled_mask


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses as inf
        raise ValueError(f"the number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode_body(raw: bytes) -> Any:
    """The body's JSON; a :class:`RequestError` for anything the API's JSON does not allow."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        body = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise RequestError(400, f"the body is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise RequestError(400, f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # NaN/Infinity, a float out of range, an integer of too many digits
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    _check_values(body)
    if not isinstance(body, dict):
        raise RequestError(400, f"the body must be a JSON object, not {type(body).__name__}")
    return body


def _check_values(body: Any) -> None:
    """Depth and strings, walked without recursion (a hostile body must not exhaust the stack)."""
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise RequestError(400, "the body holds a lone surrogate (an unpaired \\ud800-\\udfff escape)") from None
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise RequestError(400, f"the body is nested more than {MAX_DEPTH} levels deep")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str):
                stack.append((key, depth))
            stack.append((item, depth + 1))


def _integer(body: dict[str, Any], name: str, *, minimum: int, maximum: int = 2**63 - 1) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(400, f"{name} must be an integer, not {json.dumps(value)[:40]}", name)
    if not minimum <= value <= maximum:
        raise RequestError(400, f"{name} must be an integer from {minimum} to {maximum}, not {str(value)[:40]}", name)
    return value


def _number(body: dict[str, Any], name: str, default: float, low: float, high: float, *, open_low: bool = False) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(400, f"{name} must be a number, not {json.dumps(value)[:40]}", name)
    if value > high or value < low or (open_low and value == low):
        raise RequestError(400, f"{name} must be {'above' if open_low else 'at least'} {low:g} and at most {high:g}, not {value}", name)
    return float(value)


def _unsupported(body: dict[str, Any]) -> None:
    """Options the API defines that this server cannot honour: refused, never silently ignored."""
    if body.get("n") is not None and _integer(body, "n", minimum=1) != 1:
        raise RequestError(400, "only n=1 is supported", "n")
    if body.get("stop") not in (None, [], ""):
        raise RequestError(400, "stop sequences are not supported", "stop")
    fmt = body.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise RequestError(400, 'only response_format {"type": "text"} is supported; use tools for structured output', "response_format")
    for name in ("presence_penalty", "frequency_penalty"):
        if body.get(name) not in (None, 0, 0.0):
            raise RequestError(400, f"{name} is not supported", name)


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise RequestError(400, f"{name} must be true or false, not {json.dumps(value)[:40]}", name)
    return bool(value)


def _token_record(body: dict[str, Any], stream: bool, available: bool) -> tuple[bool, bool]:
    """(``logprobs``, ``return_token_ids``), checked: only what can be answered exactly."""
    logprobs, token_ids = _flag(body, "logprobs"), _flag(body, "return_token_ids")
    top = _integer(body, "top_logprobs", minimum=0, maximum=20)
    if top is not None and not logprobs:
        raise RequestError(400, "top_logprobs needs logprobs: true", "top_logprobs")
    if top:
        raise RequestError(400, "only top_logprobs 0 is supported (each token's own logprob is returned)", "top_logprobs")
    for name, asked in (("logprobs", logprobs), ("return_token_ids", token_ids)):
        if asked and stream:
            raise RequestError(400, f"{name} is not supported with stream: true", name)
        if asked and not available:
            raise RequestError(400, f"{name}: this server's planner gives no token records (only the local model does)", name)
    return logprobs, token_ids


def _messages(raw: Any) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        raise RequestError(400, "messages must be a non-empty array", "messages")
    out = []
    for i, msg in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise RequestError(400, f"{where} must be an object", where)
        role = msg.get("role")
        if role not in _ROLES:
            raise RequestError(400, f"{where}.role must be one of {', '.join(_ROLES)}, not {json.dumps(role)[:40]}", f"{where}.role")
        content = msg.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                    raise RequestError(400, f"{where}.content: only text parts are supported", f"{where}.content")
        elif not (isinstance(content, str) or (content is None and role == "assistant")):
            raise RequestError(400, f"{where}.content must be a string or an array of text parts", f"{where}.content")
        if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
            raise RequestError(400, f"{where}.tool_call_id must be a string", f"{where}.tool_call_id")
        calls = msg.get("tool_calls")
        if calls is not None and not (role == "assistant" and isinstance(calls, list) and all(
                isinstance(c, dict) and isinstance(c.get("function"), dict) and isinstance(c["function"].get("name"), str)
                and isinstance(c["function"].get("arguments", ""), str) for c in calls)):
            raise RequestError(400, f"{where}.tool_calls must be an assistant's array of function calls", f"{where}.tool_calls")
        out.append({**msg, "role": "system" if role == "developer" else role})
    return out


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RequestError(400, "tools must be an array", "tools")
    specs: list[ToolSpec] = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        fn = item.get("function") if isinstance(item, dict) and item.get("type", "function") == "function" else None
        if not isinstance(fn, dict):
            raise RequestError(400, f'{where} must be {{"type": "function", "function": {{...}}}}', where)
        name = fn.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise RequestError(400, f"{where}.function.name must be 1-64 letters, digits, _ or -, not {json.dumps(name)[:70]}", f"{where}.function.name")
        if name in {s.name for s in specs}:
            raise RequestError(400, f"{where}: two tools are named {name!r}", f"{where}.function.name")
        description = fn.get("description") or ""
        if not isinstance(description, str):
            raise RequestError(400, f"{where}.function.description must be a string", f"{where}.function.description")
        params = fn.get("parameters")
        params = {"type": "object", "properties": {}} if params is None else params
        problem = schema_error(params)
        if problem:
            raise RequestError(400, f"{where}.function.parameters {problem}", f"{where}.function.parameters")
        specs.append(ToolSpec(name=name, description=description, parameters=params))
    return tuple(specs)


def _tool_choice(raw: Any, tools: tuple[ToolSpec, ...]) -> tuple[str, tuple[str, ...] | None]:
    """(``auto``/``required``/``none``/``function``, the named tool if one)."""
    if raw is None:
        return ("auto" if tools else "none"), None
    if isinstance(raw, dict):
        fn = raw.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if raw.get("type", "function") != "function" or name not in {t.name for t in tools}:
            raise RequestError(400, f"tool_choice names {name!r}, which is not among the tools", "tool_choice")
        return "function", (name,)
    if raw not in ("auto", "required", "none"):
        raise RequestError(400, f"tool_choice must be auto, required, none or a named function, not {json.dumps(raw)[:40]}", "tool_choice")
    if raw == "required" and not tools:
        raise RequestError(400, "tool_choice required needs tools", "tool_choice")
    return raw, None


def parse_chat(body: dict[str, Any], models: tuple[str, ...], *, token_records: bool = False) -> ChatRequest:
    """A chat-completions body as a :class:`ChatRequest`; ``models`` are the ids served (the first
    is the default); ``token_records`` says whether the planner can give token records."""
    model = body.get("model", models[0])
    if not isinstance(model, str):
        raise RequestError(400, "model must be a string", "model")
    if model not in models:
        raise RequestError(404, f"The model `{model}` does not exist; this server has {', '.join(f'`{m}`' for m in models)}", "model", "model_not_found")
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise RequestError(400, "stream must be true or false", "stream")
    options = body.get("stream_options")
    if options is not None and (not stream or not isinstance(options, dict)):
        raise RequestError(400, "stream_options is only allowed with stream: true, as an object", "stream_options")
    _unsupported(body)
    logprobs, token_ids = _token_record(body, bool(stream), token_records)
    messages = _messages(body.get("messages"))
    tools = _tools(body.get("tools"))
    choice, only = _tool_choice(body.get("tool_choice"), tools)
    budget = _integer(body, "max_completion_tokens", minimum=1) or _integer(body, "max_tokens", minimum=1) or DEFAULT_MAX_TOKENS
    seed = _integer(body, "seed", minimum=0) or 0
    sampling = Sampling(
        temperature=_number(body, "temperature", 0.0, 0.0, 2.0), top_p=_number(body, "top_p", 1.0, 0.0, 1.0, open_low=True),
        max_new_tokens=budget, seed=seed,
    )
    try:
        chat = tuple(openai_to_messages(messages))
    except (ValueError, TypeError) as exc:
        raise RequestError(400, f"messages: {exc}", "messages") from exc
    plan = PlanRequest(chat, () if choice == "none" else tools, sampling, only, tokens=logprobs or token_ids)
    return ChatRequest(plan, model, bool(stream), bool((options or {}).get("include_usage")), choice, logprobs, token_ids)
