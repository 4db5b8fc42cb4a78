"""Token records from an OpenAI-compatible server, over real HTTP: asked for only when wanted,
read from vLLM's and ``serve``'s shapes, and dropped with one logged reason when they do not add up."""

from __future__ import annotations

import json
import logging

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners.openai.answer import read_answer
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.planners.openai.tokens import MAX_COMPLETION_IDS, MAX_PROMPT_IDS
from tests.planner_runtime.planners.fake_openai import FakeOpenAI, Reply

ALARM = ToolSpec(name="set_alarm", description="Set an alarm.",
                 parameters={"type": "object", "properties": {"hour": {"type": "integer"}, "minutes": {"type": "integer"}}})
CHAT = [Message(role=Role.system, content="You operate a phone."), Message(role=Role.user, content="Alarm at 7:30")]
CALL = {"id": "call_1", "type": "function", "function": {"name": "set_alarm", "arguments": '{"hour": 7, "minutes": 30}'}}


def _answer(choice_extra: str = "", top_extra: str = "") -> Reply:
    """A 200 answer calling set_alarm, with JSON members added to the choice and the top level as written."""
    choice = '{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [' \
        + json.dumps(CALL) + "]}" + (", " + choice_extra if choice_extra else "") + "}"
    body = '{"choices": [' + choice + '], "usage": {"prompt_tokens": 3, "completion_tokens": 2}' + (", " + top_extra if top_extra else "") + "}"
    return Reply(body=body.encode())


def _logprobs(*values: str) -> str:
    return '"logprobs": {"content": [' + ", ".join('{"token": "t", "logprob": ' + v + ', "bytes": [116], "top_logprobs": []}' for v in values) + "]}"


VLLM = _answer('"token_ids": [11, 12], ' + _logprobs("-0.25", "0.0"), '"prompt_token_ids": [1, 2, 3]')
SERVE = _answer('"prompt_token_ids": [1, 2, 3], "token_ids": [11, 12], "sampled_mask": [false, true], ' + _logprobs("-1.5", "-0.5"))


def _plan(replies: list[Reply], **kwargs) -> tuple[list, list[dict]]:  # noqa: ANN003
    with FakeOpenAI(replies) as fake, OpenAIPlanner(fake.base_url, "smol", timeout=10, **kwargs) as planner:
        outs = [planner.plan(CHAT, [ALARM]) for _ in replies]
        return outs, [json.loads(r) for r in fake.requests]


def test_records_are_asked_for_only_when_wanted():
    (out,), (sent,) = _plan([VLLM])
    assert "logprobs" not in sent and "return_token_ids" not in sent  # many servers refuse fields they do not know
    assert out.tokens is None and out.tool_calls[0].name == "set_alarm"
    (out,), (sent,) = _plan([VLLM], token_records=True)
    assert sent["logprobs"] is True and sent["return_token_ids"] is True


def test_vllm_and_serve_shapes_fill_the_turns_token_record():
    (vllm, serve), _ = _plan([VLLM, SERVE], token_records=True)
    assert vllm.tokens.prompt_ids == (1, 2, 3) and vllm.tokens.completion_ids == (11, 12)
    assert vllm.tokens.logprobs == (-0.25, 0.0) and vllm.tokens.sampled == ()  # vLLM does not say what was forced
    assert vllm.tokens.tokenizer == "openai:smol"
    assert serve.tokens.prompt_ids == (1, 2, 3) and serve.tokens.sampled == (False, True)
    assert serve.tokens.logprobs == (-1.5, -0.5)
    assert serve.tool_calls[0].arguments == {"hour": 7, "minutes": 30}


HOSTILE = {  # the server's token fields → the field named in the logged reason
    "no ids at all": (_answer(_logprobs("-0.1")), "prompt_token_ids and token_ids"),
    "no prompt ids": (_answer('"token_ids": [11]'), "prompt_token_ids"),
    "ids as strings": (_answer('"token_ids": ["11", "12"], "prompt_token_ids": [1]'), "token_ids"),
    "negative id": (_answer('"token_ids": [-1], "prompt_token_ids": [1]'), "token_ids"),
    "id past 32 bits": (_answer('"token_ids": [4294967296], "prompt_token_ids": [1]'), "token_ids"),
    "id of 5000 digits": (_answer('"token_ids": [' + "9" * 5000 + '], "prompt_token_ids": [1]'), "token_ids"),
    "boolean id": (_answer('"token_ids": [true], "prompt_token_ids": [1]'), "token_ids"),
    "float id": (_answer('"token_ids": [1.5], "prompt_token_ids": [1]'), "token_ids"),
    "ids not a list": (_answer('"token_ids": {"0": 1}, "prompt_token_ids": [1]'), "token_ids"),
    "too many prompt ids": (_answer('"token_ids": [1], "prompt_token_ids": [' + ",".join(["7"] * (MAX_PROMPT_IDS + 1)) + "]"), "prompt_token_ids"),
    "too many completion ids": (_answer('"token_ids": [' + ",".join(["7"] * (MAX_COMPLETION_IDS + 1)) + '], "prompt_token_ids": [1]'), "token_ids"),
    "fewer logprobs than ids": (_answer('"token_ids": [11, 12], "prompt_token_ids": [1], ' + _logprobs("-0.1")), "logprobs"),
    "NaN logprob": (_answer('"token_ids": [11], "prompt_token_ids": [1], ' + _logprobs("NaN")), "logprobs"),
    "infinite logprob": (_answer('"token_ids": [11], "prompt_token_ids": [1], ' + _logprobs("-Infinity")), "logprobs"),
    "positive logprob": (_answer('"token_ids": [11], "prompt_token_ids": [1], ' + _logprobs("0.5")), "logprobs"),
    "logprob as text": (_answer('"token_ids": [11], "prompt_token_ids": [1], ' + _logprobs('"-0.1"')), "logprobs"),
    "mask of numbers": (_answer('"token_ids": [11], "prompt_token_ids": [1], "sampled_mask": [1]'), "sampled_mask"),
    "mask too short": (_answer('"token_ids": [11, 12], "prompt_token_ids": [1], "sampled_mask": [true]'), "sampled_mask"),
}


@pytest.mark.parametrize("reply,field", HOSTILE.values(), ids=HOSTILE.keys())
def test_records_that_do_not_add_up_are_dropped_and_the_turn_is_kept(reply, field, caplog):
    with caplog.at_level(logging.WARNING, logger="planner_runtime.planners.openai.client"):
        outs, _ = _plan([reply, reply], token_records=True)
    for out in outs:
        assert out.tokens is None  # kept whole or not at all: training never reads half a record
        assert out.tool_calls[0].arguments == {"hour": 7, "minutes": 30} and not out.errors
        out.to_json()  # the step still stores
    warned = [r.getMessage() for r in caplog.records if "without token records" in r.getMessage()]
    assert len(warned) == 1 and f": {field}:" in warned[0], warned  # said once, not once per turn


def test_a_record_read_from_a_decoded_answer_never_raises_on_any_shape():
    problems = []
    for payload in ({"choices": "x"}, {"choices": [{"token_ids": [1], "prompt_token_ids": None}]}, [], None,
                    {"choices": [{"message": {}, "token_ids": [1], "prompt_token_ids": [2], "logprobs": {"content": None}}]}):
        out = read_answer(payload, tokenizer="t", on_token_problem=problems.append)
        out.to_json()
    assert read_answer({"choices": [{"message": {}, "token_ids": [1], "prompt_token_ids": [2], "logprobs": None}]},
                       tokenizer="t").tokens.completion_ids == (1,)
