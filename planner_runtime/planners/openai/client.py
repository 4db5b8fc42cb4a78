"""The ``openai`` planner: any OpenAI-compatible ``/v1/chat/completions`` server over httpx.

Works with vLLM, SGLang, llama.cpp's server, Ollama, hosted APIs and ``planner-agent serve``.
Our messages map onto the API's: an assistant turn that holds ``<tool_call>`` blocks becomes an
assistant message with ``tool_calls`` whose ids are those of the tool results that follow it, and
a turn that cannot be mapped that way (no call, or a call count that does not match its results)
is sent as text with its results as ``<tool_response>`` user turns, as the chat template renders
them. The answer's ``tool_calls`` — or ``<tool_call>`` text for servers without a tool parser —
become a :class:`~planner_runtime.planners.PlannerOutput` (see :mod:`.answer`): whatever
the model wrote, however hostile, becomes :class:`~planner_runtime.contract.ToolError` s, never
exceptions.

Failures of the server are ours to handle: 429 and 5xx answers and connection errors are retried
with exponential backoff and jitter (``Retry-After`` honoured), all within one deadline of
``timeout`` seconds per step. A server that cannot be reached or keeps failing raises
:class:`~planner_runtime.planners.PlannerUnavailable` (the episode ends as ``infra_error``); one
that takes the request and gives no answer in time raises
:class:`~planner_runtime.planners.PlannerTimeout` (a ``timeout`` step). Other 4xx answers raise
:class:`~planner_runtime.errors.PlannerError` with the status and the server's message: they are
configuration faults that retrying cannot mend.

With ``token_records=True`` each request also asks for ``"logprobs": true`` and vLLM's
``"return_token_ids": true``, and the answer's token ids, logprobs and sampled mask fill
``PlannerOutput.tokens`` (:mod:`.tokens`). It is off by default: many servers refuse fields
they do not know. A server that sends no records, or records that do not add up, costs the
turn nothing but its record; the reason is logged once per faulty field.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import time
from typing import Any, Sequence
from urllib.parse import urlsplit

import httpx

from planner_runtime.contract import Message, ToolSpec
from planner_runtime.deadline import seconds_left
from planner_runtime.errors import ConfigError, PlannerError
from planner_runtime.planners import PlannerContextExceeded, PlannerOutput, PlannerTimeout, PlannerUnavailable, Sampling
from planner_runtime.planners.openai.answer import read_body
from planner_runtime.planners.openai.tokens import TokenReading
from planner_runtime.planners.toolcalls import UnreadableJson, clean_text, loads
from planner_runtime.planners.openai.wire import messages_to_openai, tools_to_openai

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
# How servers say a prompt is too long: OpenAI's context_length_exceeded, vLLM's "maximum context
# length", llama.cpp's "exceeds the available context size", serve's "exceeds the model's context".
_CONTEXT_FULL = re.compile(r"context[_ ]length|maximum context|context size|model's context|too many tokens", re.I)
# Refused, unresolvable, reset or cut off: the endpoint is down or the network between is.
_RETRY_ERRORS = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.DecodingError)
MAX_BODY_BYTES = 8 * 1024 * 1024  # a 2xx answer past this is cut off and read as a runaway reply
_ERROR_BODY_BYTES = 64 * 1024
log = logging.getLogger(__name__)


class OpenAIPlanner:
    """A planner behind an OpenAI-compatible HTTP endpoint.

    ``tool_choice`` is sent with every request that offers tools: ``"auto"``, ``"required"``,
    ``"none"`` or a tool name (which forces that tool). ``token_records`` asks for token ids and
    logprobs (see the module docstring). ``transport`` swaps httpx's transport (tests). Nothing
    connects until the first :meth:`plan`.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        tool_choice: str = "auto",
        max_new_tokens: int = 256,
        extra_body: dict[str, Any] | None = None,
        token_records: bool = False,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
            raise ConfigError(f"openai planner: timeout must be a number of seconds > 0, not {timeout!r}")
        if max_retries < 0:
            raise ConfigError(f"openai planner: max_retries must be >= 0, not {max_retries!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.tool_choice = tool_choice
        self.max_new_tokens = max_new_tokens
        self.extra_body = dict(extra_body or {})
        self.token_records = token_records
        self._token_problems: set[str] = set()  # fields whose fault was logged, so a server's habit is said once
        self._transport = transport
        self._client: httpx.Client | None = None
        self._random = random.Random()
        self.last_attempts = 0  # requests the last plan() sent, for tests and logs

    @property
    def release(self) -> str:
        return f"openai:{self.model}@{urlsplit(self.base_url).netloc}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OpenAIPlanner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(base_url=self.base_url, headers=headers, transport=self._transport)
        return self._client

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec], sampling: Sampling) -> dict[str, Any]:
        """The JSON body sent for one turn."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages_to_openai(messages),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
            "seed": sampling.seed,
        }
        if tools:
            body["tools"] = tools_to_openai(tools)
            choice = self.tool_choice
            body["tool_choice"] = choice if choice in ("auto", "required", "none") else {"type": "function", "function": {"name": choice}}
        if self.token_records:
            body["logprobs"] = True
            body["return_token_ids"] = True
        return {**body, **self.extra_body}

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        sampling = sampling or Sampling(max_new_tokens=self.max_new_tokens)
        started = time.perf_counter()
        raw = self._post("/chat/completions", self.request_body(messages, tools, sampling))
        tokenizer = f"openai:{self.model}" if self.token_records else None  # the ids are the served model's
        out = read_body(raw, limit=MAX_BODY_BYTES, server=self.base_url, tokenizer=tokenizer, on_token_problem=self._token_problem)
        return out.model_copy(update={"timings": {**out.timings, "request_s": time.perf_counter() - started}})

    def _token_problem(self, reading: TokenReading) -> None:
        if reading.field not in self._token_problems:  # one line per faulty field, not one per turn
            self._token_problems.add(reading.field)
            log.warning("%s: turns are kept without token records: %s", self.base_url, reading.problem)

    def _post(self, path: str, body: dict[str, Any]) -> bytes:
        """The body of a 2xx answer (at most ``MAX_BODY_BYTES`` + 1 bytes of it)."""
        deadline = time.monotonic() + seconds_left(self.timeout)  # never past the episode's own deadline
        self.last_attempts = 0
        fault = ""  # why the last attempt failed, when it failed in a way a retry may mend
        for attempt in range(self.max_retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.last_attempts += 1
            last = attempt == self.max_retries
            retry_after: str | None = None
            try:
                with self._http().stream("POST", path, json=body, timeout=left) as response:
                    if response.status_code < 400:
                        return _read_capped(response, MAX_BODY_BYTES)
                    message = f"{self.base_url}{path}: HTTP {response.status_code}: {_server_message(response)}"
                    retry_after = response.headers.get("retry-after")
                    if response.status_code not in RETRY_STATUSES:
                        if response.status_code in (400, 413) and _CONTEXT_FULL.search(message):
                            raise PlannerContextExceeded(message)
                        raise PlannerError(message)
                    fault = message
            except httpx.ConnectTimeout as exc:
                fault = f"{self.base_url}: could not connect ({str(exc) or 'connect timeout'})"
            except httpx.TimeoutException as exc:  # connected, asked, and heard nothing back in time
                raise PlannerTimeout(f"{self.base_url} gave no answer within {self.timeout:g} s") from exc
            except _RETRY_ERRORS as exc:
                fault = f"{self.base_url} is unreachable: {type(exc).__name__}: {exc}"
            if last:
                raise PlannerUnavailable(f"{fault} (after {attempt + 1} attempts)")
            wait = self._backoff(attempt, retry_after)
            if time.monotonic() + wait >= deadline:
                break
            time.sleep(wait)
        if fault:
            raise PlannerUnavailable(f"{fault} (still failing after {self.last_attempts} attempts in {self.timeout:g} s)")
        raise PlannerTimeout(f"{self.base_url} gave no usable answer within {self.timeout:g} s ({self.last_attempts} attempts)")

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before the next attempt: the server's Retry-After, else 2^n with jitter."""
        asked = _retry_after_seconds(retry_after)
        if asked is not None:
            return asked
        return min(self.max_backoff_s, self.backoff_s * 2**attempt) * self._random.uniform(0.5, 1.0)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of the body: enough to tell it is over, never a hostile gigabyte."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(chunks)[: limit + 1]


def _server_message(response: httpx.Response) -> str:
    """The error message an OpenAI-style server put in its body, else the start of the body."""
    text = _read_capped(response, _ERROR_BODY_BYTES).decode("utf-8", errors="replace")
    try:
        body = loads(text)
    except UnreadableJson:
        return clean_text(text[:300]) or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return clean_text(err["message"], 300)
        if isinstance(err, str):
            return clean_text(err, 300)
        if isinstance(body.get("detail"), str):
            return clean_text(body["detail"], 300)
    return clean_text(str(body)[:300])
