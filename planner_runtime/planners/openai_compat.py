"""The ``openai`` planner: any OpenAI-compatible ``/v1/chat/completions`` server over httpx.

Works with vLLM, SGLang, llama.cpp's server, Ollama, hosted APIs and ``planner-agent serve``.
Our messages map onto the API's: an assistant turn that holds ``<tool_call>`` blocks becomes an
assistant message with ``tool_calls`` whose ids are those of the tool results that follow it, and
a turn that cannot be mapped that way (no call, or a call count that does not match its results)
is sent as text with its results as ``<tool_response>`` user turns, as the chat template renders
them. The answer's ``tool_calls`` — or ``<tool_call>`` text for servers without a tool parser —
become a :class:`~planner_runtime.planners.PlannerOutput`; malformed arguments become
:class:`~planner_runtime.contract.ToolError` s, never exceptions (see :mod:`planner_runtime.serving.wire`).

Failures of the server are ours to handle: 429 and 5xx answers and connection errors are retried
with exponential backoff and jitter (``Retry-After`` honoured), all within one deadline of
``timeout`` seconds per step; a step that gets no answer in time raises
:class:`~planner_runtime.planners.PlannerTimeout`, which the episode loop records as ``timeout``
feedback. Other 4xx answers raise :class:`~planner_runtime.errors.PlannerError` with the status
and the server's message: they are configuration faults that retrying cannot mend.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any, Sequence
from urllib.parse import urlsplit

import httpx

from planner_runtime.contract import Message, ToolSpec
from planner_runtime.errors import ConfigError, PlannerError
from planner_runtime.planners import PlannerOutput, PlannerTimeout, Sampling
from planner_runtime.serving.wire import completion_to_output, messages_to_openai, tools_to_openai

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_RETRY_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class OpenAIPlanner:
    """A planner behind an OpenAI-compatible HTTP endpoint.

    ``tool_choice`` is sent with every request that offers tools: ``"auto"``, ``"required"``,
    ``"none"`` or a tool name (which forces that tool). ``transport`` swaps httpx's transport
    (tests). Nothing connects until the first :meth:`plan`.
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
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if timeout <= 0 or max_retries < 0:
            raise ConfigError("openai planner: timeout must be > 0 and max_retries >= 0")
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
        return {**body, **self.extra_body}

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        sampling = sampling or Sampling(max_new_tokens=self.max_new_tokens)
        started = time.perf_counter()
        payload = self._post("/chat/completions", self.request_body(messages, tools, sampling))
        out = completion_to_output(payload)
        return out.model_copy(update={"timings": {**out.timings, "request_s": time.perf_counter() - started}})

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        deadline = time.monotonic() + self.timeout
        self.last_attempts = 0
        for attempt in range(self.max_retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.last_attempts += 1
            wait: float | None = None
            try:
                response = self._http().post(path, json=body, timeout=left)
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout) and attempt < self.max_retries:
                    wait = self._backoff(attempt, None)
                else:
                    raise PlannerTimeout(f"{self.base_url} gave no answer within {self.timeout:g} s") from exc
            except _RETRY_ERRORS as exc:
                if attempt == self.max_retries:
                    raise PlannerTimeout(f"{self.base_url} is unreachable after {attempt + 1} attempts: {exc}") from exc
                wait = self._backoff(attempt, None)
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise PlannerError(f"{self.base_url}: the answer is not JSON: {response.text[:200]!r}") from exc
                if response.status_code not in RETRY_STATUSES or attempt == self.max_retries:
                    raise PlannerError(f"{self.base_url}{path}: HTTP {response.status_code}: {_server_message(response)}")
                wait = self._backoff(attempt, response.headers.get("retry-after"))
            if time.monotonic() + wait >= deadline:
                break
            time.sleep(wait)
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


def _server_message(response: httpx.Response) -> str:
    """The error message an OpenAI-style server put in its body, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("detail"), str):
            return body["detail"]
    return str(body)[:300]
