"""Planner protocol, its output record and the registry of backends by short name.

A planner turns chat messages plus tool specs into text and parsed tool calls. Backends are
imported lazily by name, so loading the registry never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, Sequence, runtime_checkable
from urllib.parse import urlsplit

from pydantic import Field

from planner_runtime.contract import Message, Record, ToolCall, ToolError, ToolSpec, TurnTokens, Usage
from planner_runtime.errors import ConfigError, PlannerError


class Sampling(Record):
    """Decoding settings; temperature 0 means greedy."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    seed: int = 0


class PlannerOutput(Record):
    """What a planner produced for one turn.

    ``tool_calls`` holds the calls that parsed; ``errors`` says what did not (malformed JSON, no
    call at all), so the harness can answer with feedback instead of raising. ``cut`` says the
    token budget forced the call's closing (a string or list ended early to fit): such a call
    parses but is not what the model meant, so the harness answers it instead of running it.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    errors: tuple[ToolError, ...] = ()
    usage: Usage = Usage()
    timings: dict[str, float] = Field(default_factory=dict)
    cut: bool = False
    tokens: TurnTokens | None = None  # ids, logprobs and the sampled mask, when the backend gives them


class PlannerTimeout(PlannerError):
    """The planner's backend took a request but gave no answer in time (a slow or hung server).

    Not the model's mistake and not a bug: the episode loop records the step with ``timeout``
    feedback and asks again; timeouts on consecutive turns end the episode as ``infra_error``.
    """


class PlannerContextExceeded(PlannerError):
    """The conversation no longer fits the model's context (the local model's, or a server's
    "maximum context length" answer). Neither an infra fault nor a bug: the episode ends
    ``truncated``, as at any other limit, and a collection goes on with its next item."""


class PlannerUnavailable(PlannerError):
    """The planner's backend cannot be reached or keeps failing: connection refused, a name that
    does not resolve, a reset connection, 5xx answers after the retries, a body that is not JSON.

    An infra fault, never the model's mistake: the episode ends as ``infra_error`` with no step
    recorded for the turn that got no answer, so a collection retries the item.
    """


@runtime_checkable
class Planner(Protocol):
    name: str
    release: str

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput: ...


_REGISTRY: dict[str, str] = {
    "scripted": "planner_runtime.planners.scripted:ScriptedPlanner",
    "demo": "planner_runtime.planners.demo:DemoPlanner",
    "local": "planner_runtime.planners.local.planner:LocalPlanner",
    "openai": "planner_runtime.planners.openai.client:OpenAIPlanner",
}


def available() -> list[str]:
    return sorted(_REGISTRY)


def parse_planner_url(spec: str) -> tuple[str, dict[str, Any]]:
    """``openai://host:port/model`` (or ``openai+https://host/model``) → ``("openai", kwargs)``.

    Any other spec is a plain registry name with no arguments.
    """
    scheme, sep, rest = spec.partition("://")
    if not sep or not scheme.startswith("openai"):
        return spec, {}
    transport = scheme.partition("+")[2] or "http"
    if transport not in ("http", "https"):
        raise ConfigError(f"planner {spec!r}: use openai:// or openai+https://")
    address, slash, model = rest.partition("/")
    if not address or not model:
        raise ConfigError(f"planner {spec!r}: expected openai://host:port/model")
    try:  # a bad port would otherwise surface only as an unreachable endpoint, an infra fault
        parts = urlsplit(f"{transport}://{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port == 0 or (port is None and address.rpartition("]")[2].count(":")):
        raise ConfigError(f"planner {spec!r}: expected openai://host:port/model with a port from 1 to 65535")
    # The model name may hold slashes (``Qwen/Qwen2.5-7B-Instruct``); the API root is /v1.
    return "openai", {"base_url": f"{transport}://{address}/v1", "model": model}


def create(name: str, **kwargs: Any) -> Planner:
    """Build the planner registered under ``name`` with backend-specific keyword arguments.

    ``name`` may also be a URL such as ``openai://127.0.0.1:8000/my-model``.
    """
    name, from_url = parse_planner_url(name)
    kwargs = {**from_url, **kwargs}
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown planner {name!r}; choose one of {', '.join(available())}") from None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)(**kwargs)
