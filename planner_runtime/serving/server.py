"""``planner-agent serve``: the planner behind an OpenAI-compatible HTTP endpoint.

Routes: ``GET /v1/models`` (and ``/v1/models/{id}``), ``POST /v1/chat/completions`` (``tools``;
``tool_choice`` ``auto``, ``required``, ``none`` or a named function; ``stream``), ``GET /health``.
HTTP is Starlette on uvicorn (h11), on one event loop in a background thread: a waiting request
costs no thread, so many harness workers connect at once, while one :class:`Engine` worker owns
the model and decodes their requests together (a request joins the running batch at the next
step). A request whose client disconnects, or that outlives ``request_timeout_s``, is cancelled
in the engine. Requests are read strictly (:mod:`~planner_runtime.serving.requests`): the body
must be ``application/json`` of at most ``max_body_bytes``, and every refusal is a 4xx with the
API's error body. The server answers to its model's name and to ``planner``, the name the
README's ``--planner openai://127.0.0.1:8000/planner`` asks for.

With the embedded planner, ``auto`` and ``required`` behave alike: its answer is constrained to
one call of an offered tool. A named tool keeps every tool in the prompt and constrains the call
to that one; ``none`` offers no tools.

Token records, for RL (the local model only; refused with ``stream: true``). The standard
``logprobs: true`` gives ``choices[0].logprobs.content``: one entry per completion token,
``{"token": str, "logprob": float, "bytes": [int], "top_logprobs": []}``. The extension
``return_token_ids: true`` (vLLM's name) adds to ``choices[0]``: ``prompt_token_ids`` (the ids
the model read: the rendered chat up to the open assistant turn), ``token_ids`` (the completion's
ids) and ``sampled_mask`` (a bool per completion token, ``false`` where the token was forced).
The completion is the assistant text's tokens *prefill included*: the ``<tool_call>\n{"name": "``
the server opens a call with is its first tokens, with logprob 0.0 and ``sampled_mask`` false;
tokens the grammar forces are false as well, and their logprobs are the model's own. Logprobs are
the log-softmax of the raw logits at temperature 1, before the grammar's mask, whatever the
request's temperature. ``logprobs.content``, ``token_ids`` and ``sampled_mask`` align one to one.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from concurrent.futures import Future
from typing import Any, AsyncIterator

from planner_runtime.asgi_thread import AsgiThread
from planner_runtime.contract import new_id
from planner_runtime.errors import PlannerError
from planner_runtime.planners import PlannerContextExceeded
from planner_runtime.planners import Planner, PlannerOutput
from planner_runtime.serving import sse
from planner_runtime.planners.local.batch import Decoded
from planner_runtime.planners.local.decoding import Decoding
from planner_runtime.serving.engine import Engine
from planner_runtime.serving.requests import ChatRequest, ClientGone, RequestError, decode_body, parse_chat
from planner_runtime.planners.openai.wire import output_to_completion

log = logging.getLogger(__name__)

ALIAS = "planner"  # the model id the README's example asks for
MAX_BODY_BYTES = 4 * 2**20
BODY_TIMEOUT_S = 30.0  # a client that announces a body and does not send it is answered 408


class PlannerServer:
    """Serves ``planner`` as model ``model_name`` (and ``planner``); ``port=0`` picks a free port."""

    def __init__(
        self, planner: Planner, *, model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
        max_batch: int = 8, request_timeout_s: float = 300.0, max_body_bytes: int = MAX_BODY_BYTES,
        body_timeout_s: float = BODY_TIMEOUT_S,
    ) -> None:
        self.planner = planner
        self.model_name = model_name or getattr(planner, "label", None) or planner.name
        self.model_ids = tuple(dict.fromkeys((self.model_name, ALIAS)))
        self.host, self.port = host, port
        self.request_timeout_s = request_timeout_s
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.engine = Engine(planner, max_batch=max_batch)
        self._http: AsgiThread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> PlannerServer:
        """Load the model, bind, and serve on a background thread; returns once listening.
        An address that cannot be bound raises :class:`OSError`."""
        from planner_runtime.serving.routes import app_for

        sock = socket.create_server((self.host, self.port), backlog=2048)  # bound here: errors reach the caller
        try:
            self.engine.start()
        except BaseException:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._http = AsgiThread(app_for(self), sock, name="planner-http",
                                timeout_keep_alive=30)  # harness workers come back every step: keep their connections
        if not self._http.start():
            self._http = None
            self.engine.stop()
            raise PlannerError(f"the HTTP server on {self.host}:{self.port} did not start")
        return self

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish (5 s at most), then stop the engine."""
        if self._http is not None:
            self._http.stop()
            self._http = None
        self.engine.stop()

    def __enter__(self) -> PlannerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [self.model_card(m) for m in self.model_ids]}

    def model_card(self, model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "planner-agent"}

    # --- one chat completion ------------------------------------------------------------------

    async def read_chat(self, request: Any) -> ChatRequest:
        """The request's checked body (Starlette ``request``); :class:`RequestError` otherwise."""
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise RequestError(415, f"Content-Type must be application/json, not {media or 'missing'!r}", code="unsupported_media_type")
        declared = request.headers.get("content-length")
        if declared is not None and int(declared) > self.max_body_bytes:  # h11 let only digits through
            raise RequestError(413, f"the body is {declared} bytes; at most {self.max_body_bytes} are accepted", code="body_too_large")
        chunks: list[bytes] = []
        size = 0

        async def read() -> None:
            nonlocal size
            async for piece in request.stream():
                size += len(piece)
                if size > self.max_body_bytes:
                    raise RequestError(413, f"the body is over {self.max_body_bytes} bytes", code="body_too_large")
                chunks.append(piece)

        from starlette.requests import ClientDisconnect

        try:
            await asyncio.wait_for(read(), self.body_timeout_s)
        except ClientDisconnect:
            raise ClientGone from None
        except asyncio.TimeoutError:
            raise RequestError(408, f"the body did not arrive within {self.body_timeout_s:g} s", code="request_timeout") from None
        return parse_chat(decode_body(b"".join(chunks)), self.model_ids, token_records=self.engine.gives_tokens)

    async def answer(self, request: Any, future: Future[PlannerOutput]) -> PlannerOutput:
        """The engine's answer to ``future``; cancels it in the engine if the client goes away
        (:class:`ClientGone`) or the answer takes over ``request_timeout_s`` (503)."""
        waiting = asyncio.wrap_future(future)
        gone = asyncio.ensure_future(_disconnected(request.receive))
        try:
            done, _ = await asyncio.wait({waiting, gone}, timeout=self.request_timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not waiting.done():  # no answer coming for this caller (gone, timed out, or the server stops)
                waiting.cancel()
                self.engine.cancel(future)
        if waiting in done:
            try:
                return waiting.result()
            except PlannerError as exc:  # a request the model cannot take (too long a prompt), or shutdown
                code = "context_length_exceeded" if isinstance(exc, PlannerContextExceeded) else None
                raise RequestError(503 if self.engine.stopped else 400, str(exc), code=code) from exc
        if gone in done:
            raise ClientGone
        raise RequestError(503, f"the planner did not answer within {self.request_timeout_s:g} s", code="timeout")

    def completion(self, chat: ChatRequest, out: PlannerOutput, head: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response body for ``out``, with the API's ``finish_reason``."""
        if isinstance(out, Decoded):
            truncated = out.truncated
        else:  # a planner answering through plan() does not say; a budget used up without a call was cut
            truncated = not out.tool_calls and out.usage.completion_tokens >= chat.plan.sampling.max_new_tokens
        finish = "length" if truncated else ("stop" if chat.tool_choice == "function" else None)
        body = output_to_completion(out, model=chat.model, tool_choice_none=chat.tool_choice == "none", finish_reason=finish)
        if chat.logprobs or chat.return_token_ids:
            body["choices"][0].update(self.token_fields(chat, out))
        return {**body, **(head or {})}

    def token_fields(self, chat: ChatRequest, out: PlannerOutput) -> dict[str, Any]:
        """The choice's ``logprobs`` and token ids as the request asked (see the module's docstring)."""
        tokens = out.tokens
        if tokens is None:  # the request was accepted because the planner keeps records: a bug
            raise PlannerError("the planner's answer has no token record")
        fields: dict[str, Any] = {}
        if chat.logprobs:
            decoding: Decoding = self.planner.decoding  # type: ignore[attr-defined]
            pieces = decoding.token_bytes(tokens.completion_ids)
            fields["logprobs"] = {"content": [
                {"token": piece.decode("utf-8", errors="replace"), "logprob": logprob, "bytes": list(piece), "top_logprobs": []}
                for piece, logprob in zip(pieces, tokens.logprobs)
            ]}
        if chat.return_token_ids:
            fields.update(prompt_token_ids=list(tokens.prompt_ids), token_ids=list(tokens.completion_ids),
                          sampled_mask=list(tokens.sampled))
        return fields

    async def stream(self, request: Any, chat: ChatRequest) -> AsyncIterator[str]:
        """The events of a ``stream: true`` answer (the role chunk at once, the rest once decoded)."""
        head = {"id": new_id("chatcmpl-"), "created": int(time.time()), "model": chat.model}
        future = self.engine.submit(chat.plan)
        try:
            yield sse.first_chunk(head, usage=chat.include_usage)
            try:
                out = await self.answer(request, future)
            except ClientGone:
                return
            except RequestError as exc:
                yield sse.error_event(exc.message, exc.body()["error"]["type"])
                return
            except Exception as exc:  # noqa: BLE001 - a bug in the planner: the stream says so and ends
                log.exception("chat completion failed")
                yield sse.error_event(f"internal error: {type(exc).__name__}: {exc}")
                return
            for event in sse.rest_chunks(self.completion(chat, out, head), usage=chat.include_usage):
                yield event
        finally:  # the stream was dropped (client gone): the engine stops working on it
            if not future.done():
                self.engine.cancel(future)


async def _disconnected(receive: Any) -> None:
    """Returns once the client has disconnected (the body is already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
