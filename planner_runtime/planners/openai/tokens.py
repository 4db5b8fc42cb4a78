"""Token records in a chat-completions answer: the ids, logprobs and sampled mask RL trains on.

Asked for with ``"logprobs": true, "return_token_ids": true`` (see
:class:`~planner_runtime.planners.openai.client.OpenAIPlanner`'s ``token_records``), a server
answers with some of:

- ``choices[0].logprobs.content[i].logprob``: the standard OpenAI per-token log-probability;
- ``choices[0].token_ids`` and ``prompt_token_ids`` (on the choice, as ``planner-agent serve``
  writes it, or at the top level, as vLLM does): the completion's and the prompt's token ids;
- ``choices[0].sampled_mask``: ``planner-agent serve``'s extension, ``true`` where the model
  chose the token and ``false`` where the grammar or a prefill forced it.

Token records are training data, so a record is kept whole or not at all: without both id lists
there is none, and a shape that does not add up (lists of different lengths, ids that are not
non-negative integers, a logprob that is not a finite number at most 0, a mask that is not
booleans, more ids than :data:`MAX_PROMPT_IDS` / :data:`MAX_COMPLETION_IDS`) drops the record
with the reason. The turn itself is kept either way: its text and calls do not depend on the ids,
and a server's bookkeeping fault is neither the model's mistake nor a reason to end the episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from planner_runtime.contract import TurnTokens

MAX_PROMPT_IDS = 1 << 18  # a 256k-token context: past any model this talks to
MAX_COMPLETION_IDS = 1 << 16
MAX_TOKEN_ID = 2**31 - 1
_LOGPROB_SLACK = 1e-6  # a log-probability of 1 can come back as a rounding error above 0


@dataclass(frozen=True)
class TokenReading:
    """The token record of one answer, or ``None`` with the ``problem`` that dropped it and the
    ``field`` it was found in."""

    tokens: TurnTokens | None
    problem: str = ""
    field: str = ""


class _Refused(ValueError):
    """What the server sent in ``field`` cannot be part of a token record; the message says why."""

    def __init__(self, field: str, why: str) -> None:
        self.field = field
        super().__init__(f"{field}: {why}")


def _ids(value: Any, field: str, limit: int) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _Refused(field, "not a list")
    if len(value) > limit:
        raise _Refused(field, f"{len(value)} ids, more than {limit}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TOKEN_ID:
            raise _Refused(field, f"item {i} is not a token id: {str(v)[:40]!r}")
    return tuple(value)


def _logprobs(value: Any, n: int) -> tuple[float, ...]:
    if value is None:
        return ()
    content = value.get("content") if isinstance(value, dict) else None
    if content is None:
        return ()
    if not isinstance(content, list):
        raise _Refused("logprobs", "content is not a list")
    if len(content) != n:
        raise _Refused("logprobs", f"{len(content)} entries for {n} token ids")
    out = []
    for i, entry in enumerate(content):
        lp = entry.get("logprob") if isinstance(entry, dict) else None
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp) or lp > _LOGPROB_SLACK:
            raise _Refused("logprobs", f"content[{i}].logprob is not a log-probability: {str(lp)[:40]!r}")
        out.append(min(0.0, float(lp)))
    return tuple(out)


def _mask(value: Any, n: int) -> tuple[bool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
        raise _Refused("sampled_mask", "not a list of true/false")
    if len(value) != n:
        raise _Refused("sampled_mask", f"{len(value)} entries for {n} token ids")
    return tuple(value)


def read_tokens(payload: dict[str, Any], choice: dict[str, Any], *, tokenizer: str) -> TokenReading:
    """The token record of ``choice`` (of the answer ``payload``); never raises.

    ``logprobs`` and ``sampled`` stay empty when the server did not send them: an empty mask means
    the server did not say which tokens were forced, not that none were."""
    completion = choice.get("token_ids")
    prompt = choice.get("prompt_token_ids", payload.get("prompt_token_ids"))
    if completion is None or prompt is None:
        missing = " and ".join(name for name, v in (("prompt_token_ids", prompt), ("token_ids", completion)) if v is None)
        return TokenReading(None, f"{missing}: not sent (does the server support return_token_ids?)", missing)
    try:
        completion_ids = _ids(completion, "token_ids", MAX_COMPLETION_IDS)
        record = TurnTokens(
            prompt_ids=_ids(prompt, "prompt_token_ids", MAX_PROMPT_IDS),
            completion_ids=completion_ids,
            logprobs=_logprobs(choice.get("logprobs"), len(completion_ids)),
            sampled=_mask(choice.get("sampled_mask"), len(completion_ids)),
            tokenizer=tokenizer,
        )
    except _Refused as exc:
        return TokenReading(None, str(exc), exc.field)
    return TokenReading(record)
