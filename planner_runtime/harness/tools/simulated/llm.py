"""An LLM as the simulator's voice: over any OpenAI-compatible endpoint it writes the free-text
response of a simulated tool, the way a real service's API or app would phrase it.

The world stays the authority: the tool's steps run deterministically first (:mod:`.world`), so
state changes and ``world`` checks never depend on what a model wrote, and the model is asked
only to phrase the structured result. Its text is then checked against that result: a number
in the text that neither the result nor the call's arguments hold is a
contradiction, flagged on the world, and the verdict of an episode with one is not scored
(the simulator misled the planner: no fault of its own). An endpoint that is down, slow, or
answers something that is not text becomes a flag and the structured result is answered
instead, so the episode goes on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import httpx

from planner_runtime.harness.tools.simulated.family import Family, ToolDecl

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*")
MAX_TEXT = 2000
CONTRADICTION = "contradiction"
FALLBACK = "fallback"


def _numbers_in(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, str):
        for m in _NUMBER.finditer(value):
            try:
                yield float(m.group().replace(",", ""))
            except ValueError:
                continue
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _numbers_in(v)
    elif isinstance(value, (list, tuple)):
        yield float(len(value))
        for v in value:
            yield from _numbers_in(v)


def contradictions(text: str, *known: Any) -> list[float]:
    """Numbers ``text`` states that none of ``known`` holds (each within 0.5%, and 0.01)."""
    have = [n for k in known for n in _numbers_in(k)]
    wrong = []
    for said in _numbers_in(text):
        if not any(abs(said - h) <= max(0.01, abs(h) * 0.005) for h in have):
            wrong.append(said)
    return wrong


@dataclass
class LlmSimulator:
    """Writes responses through ``endpoint`` (``.../v1`` or the server root) with ``model``."""

    endpoint: str
    model: str = "simulator"
    timeout: float = 20.0

    def _url(self) -> str:
        base = self.endpoint.rstrip("/")
        return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")

    def _ask(self, family: Family, decl: ToolDecl, args: Mapping[str, Any], result: Any) -> str:
        prompt = (
            f"You are the {family.title} service answering the API call {decl.name}({json.dumps(dict(args))}). "
            f"The call's true result is: {json.dumps(result, sort_keys=True)}. Write the service's reply to the user in "
            "one to three sentences of plain text. State only facts from the result, with its exact numbers; add none."
        )
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0.3, "max_tokens": 200}
        answer = httpx.post(self._url(), json=body, timeout=self.timeout)
        answer.raise_for_status()
        text = answer.json()["choices"][0]["message"]["content"]
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            raise ValueError(f"the reply is no short text: {str(text)[:80]!r}")
        return " ".join(text.split())

    def respond(self, world: Any, family: Family, decl: ToolDecl, args: Mapping[str, Any], result: Any) -> Any:
        """The response the planner sees: the model's text, or ``result`` when it has none."""
        try:
            text = self._ask(family, decl, args, result)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            world.flags.append(f"{FALLBACK}: {decl.name}: the simulator at {self.endpoint} gave no response ({type(exc).__name__}: "
                               f"{str(exc)[:160]}); the structured result was answered")
            return result
        wrong = contradictions(text, result, dict(args))
        if wrong:
            shown = ", ".join(f"{n:g}" for n in wrong[:5])
            world.flags.append(f"{CONTRADICTION}: {decl.name} said {shown}, which the world does not hold: {text[:200]!r}")
        return {"response": text}
