"""``stream: true``: a chat completion as the API's server-sent events.

The chunks are those the API streams and its official client parses: a first delta with the
role, the text as ``content`` deltas, each tool call as a delta with its index, id, type and name
(``arguments`` empty) followed by deltas of its arguments, a last delta holding only the
``finish_reason``, with ``stream_options.include_usage`` a chunk of no choices holding the usage,
then ``data: [DONE]``. The chunks are cut from the finished completion body, so a streamed answer
says exactly what the same request without ``stream`` answers.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

ARGUMENT_PIECE = 64  # characters of a call's arguments per delta
DONE = "data: [DONE]\n\n"


def event(payload: Any) -> str:
    """One ``data:`` event holding ``payload`` as JSON."""
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def chunk(head: dict[str, Any], delta: dict[str, Any], finish: str | None = None, *, usage: bool = False) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice; ``head`` holds id, created and model."""
    body = {**head, "object": "chat.completion.chunk", "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    if usage:
        body["usage"] = None  # with include_usage every chunk carries the key; the last one the figures
    return body


def head_of(completion: dict[str, Any]) -> dict[str, Any]:
    return {k: completion[k] for k in ("id", "created", "model")}


def first_chunk(head: dict[str, Any], *, usage: bool = False) -> str:
    """The role delta, sent at once so the client sees the stream open while the model decodes."""
    return event(chunk(head, {"role": "assistant", "content": ""}, usage=usage))


def rest_chunks(completion: dict[str, Any], *, usage: bool = False) -> Iterator[str]:
    """Every event after :func:`first_chunk` for a finished ``completion`` body, ``[DONE]`` included."""
    head = head_of(completion)
    choice = completion["choices"][0]
    message = choice["message"]
    if message.get("content"):
        yield event(chunk(head, {"content": message["content"]}, usage=usage))
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        yield event(chunk(head, {"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                  "function": {"name": fn["name"], "arguments": ""}}]}, usage=usage))
        args = fn["arguments"]
        for at in range(0, len(args), ARGUMENT_PIECE):
            yield event(chunk(head, {"tool_calls": [{"index": index, "function": {"arguments": args[at:at + ARGUMENT_PIECE]}}]}, usage=usage))
    yield event(chunk(head, {}, choice["finish_reason"], usage=usage))
    if usage:
        yield event({**head, "object": "chat.completion.chunk", "system_fingerprint": None, "choices": [],
                     "usage": completion["usage"]})
    yield DONE


def error_event(message: str, kind: str = "server_error") -> str:
    """A failure after the stream opened (its status is already 200): the client raises on it."""
    return event({"error": {"message": message, "type": kind, "param": None, "code": None}})
