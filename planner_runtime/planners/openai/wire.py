"""The OpenAI chat-completions wire format, both ways: our records ↔ the API's JSON.

The client (:mod:`planner_runtime.planners.openai.client`) sends our messages with it; the
server (:mod:`planner_runtime.serving.server`) reads requests and writes answers. The client
reads answers in :mod:`planner_runtime.planners.openai.answer`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

from planner_runtime.contract import Message, Role, ToolSpec, new_id
from planner_runtime.planners import PlannerOutput
from planner_runtime.planners.openai.answer import text_of
from planner_runtime.planners.toolcalls import CLOSE, OPEN, parse_tool_calls


def tools_to_openai(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def _strip_calls(text: str) -> str:
    """``text`` without its ``<tool_call>`` blocks."""
    while OPEN in text:
        head, _, tail = text.partition(OPEN)
        text = head + (tail.partition(CLOSE)[2] if CLOSE in tail else "")
    return text.strip()


def messages_to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our chat as API messages; tool calls in assistant text become ``tool_calls`` when they can."""
    out: list[dict[str, Any]] = []
    mapped_ids: set[str] = set()
    for i, msg in enumerate(messages):
        if msg.role is Role.assistant:
            results = []
            for later in messages[i + 1:]:
                if later.role is not Role.tool:
                    break
                results.append(later.tool_call_id)
            calls, errors = parse_tool_calls(msg.content)
            if calls and not errors and len(calls) == len(results) and all(results):
                out.append({
                    "role": "assistant",
                    "content": _strip_calls(msg.content) or None,
                    "tool_calls": [
                        {"id": rid, "type": "function",
                         "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                        for c, rid in zip(calls, results)
                    ],
                })
                mapped_ids.update(r for r in results if r)
                continue
        if msg.role is Role.tool and msg.tool_call_id not in mapped_ids:
            # A result with no API-level call to answer: send it the way the chat template shows it.
            out.append({"role": "user", "content": f"<tool_response>\n{msg.content}\n</tool_response>"})
            continue
        entry: dict[str, Any] = {"role": msg.role.value, "content": msg.content}
        if msg.role is Role.tool:
            entry["tool_call_id"] = msg.tool_call_id
        out.append(entry)
    return out


# --- the server's side -------------------------------------------------------------------------


def openai_to_messages(raw: Sequence[Any]) -> list[Message]:
    """API messages as ours; an assistant's ``tool_calls`` become ``<tool_call>`` text."""
    out: list[Message] = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("every message must be an object")
        role = Role(item.get("role", ""))  # ValueError for an unknown role
        if role is Role.assistant and isinstance(item.get("tool_calls"), list):
            parts = [text_of(item.get("content"))]
            for tc in item["tool_calls"]:
                fn = tc.get("function", {}) if isinstance(tc, dict) else {}
                args = fn.get("arguments", "{}")
                args_text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                parts.append(f'{OPEN}\n{{"name": {json.dumps(fn.get("name", ""))}, "arguments": {args_text}}}\n{CLOSE}')
            out.append(Message(role=role, content="\n".join(p for p in parts if p)))
            continue
        tool_call_id = item.get("tool_call_id") if role is Role.tool else None
        out.append(Message(role=role, content=text_of(item.get("content")), tool_call_id=tool_call_id))
    return out


def output_to_completion(
    out: PlannerOutput, *, model: str, tool_choice_none: bool = False, finish_reason: str | None = None,
) -> dict[str, Any]:
    """Our planner's answer as a chat-completions response body. ``finish_reason`` overrides the
    one read from the answer (``tool_calls`` when it holds calls, else ``stop``): ``length`` for
    an answer cut by its token budget, ``stop`` for a call to a named tool (as the API does)."""
    message: dict[str, Any] = {"role": "assistant", "content": out.text}
    finish = "stop"
    if out.tool_calls and not tool_choice_none:
        message["content"] = _strip_calls(out.text) or None
        message["tool_calls"] = [
            {"id": c.call_id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for c in out.tool_calls
        ]
        finish = "tool_calls"
    usage = out.usage
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }
