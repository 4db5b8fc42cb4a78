"""The local planner's token record (``PlannerOutput.tokens``): what RL trains on must be exactly
what the model read and wrote, with the model's own logprobs and the sampled-vs-forced mask."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners import Sampling
from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL, render_chat

pytestmark = pytest.mark.slow

# Two tools whose names differ from the first letter: once the model picks one, the grammar
# forces the rest of the name and the JSON up to the arguments.
NAMED = [
    ToolSpec(name="alarm_clock_set_for_wake_up", description="Set an alarm.",
             parameters={"type": "object", "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}},
                         "required": ["hour", "minute"]}),
    ToolSpec(name="zoo_ticket_booking", description="Book zoo tickets.",
             parameters={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
]


def teacher_forced(planner, prompt_ids, completion_ids):
    """log-softmax of one uncached forward over prompt + completion: row i predicts token i+1."""
    import torch

    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    with torch.inference_mode():
        logits = planner.model(input_ids=ids).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


@pytest.fixture(scope="module")
def exact(model_cache):
    """The embedded model in float32, where the cached, chunked and whole forwards agree to
    float noise (in bfloat16 a logprob moves by up to ~0.2 between them)."""
    from planner_runtime.planners.local.planner import LocalPlanner

    return LocalPlanner(cache_dir=model_cache, dtype="float32").load()


TOLERANCE = 1e-3


def assert_logprobs_match(planner, tokens):
    reference = teacher_forced(planner, tokens.prompt_ids, tokens.completion_ids)
    prefill = len(planner.tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    assert tokens.logprobs[:prefill] == (0.0,) * prefill  # the prefill is documented as 0.0
    start = len(tokens.prompt_ids) - 1
    for j in range(prefill, len(tokens.completion_ids)):
        expected = float(reference[start + j, tokens.completion_ids[j]])
        assert abs(tokens.logprobs[j] - expected) < TOLERANCE, (j, tokens.logprobs[j], expected)


def test_the_ids_decode_back_to_the_prompt_and_the_answer(planner, alarm_chat, two_tools):
    out = planner.plan(alarm_chat, two_tools, sampling=Sampling(max_new_tokens=40))
    tokens = out.tokens
    assert tokens is not None and out.tool_calls
    decode = planner.tokenizer.decode
    assert decode(list(tokens.prompt_ids)) == render_chat(alarm_chat, two_tools)
    assert decode(list(tokens.completion_ids)) == out.text
    n = len(tokens.completion_ids)
    assert len(tokens.logprobs) == len(tokens.sampled) == n == out.usage.completion_tokens
    assert len(tokens.prompt_ids) == out.usage.prompt_tokens
    assert tokens.tokenizer == planner.release


def test_a_name_forced_after_a_unique_prefix_is_marked_forced(exact):
    planner = exact
    chat = [Message(role=Role.system, content="You operate an Android phone for the user."),
            Message(role=Role.user, content="Wake me up at 7:30 tomorrow with an alarm.")]
    out = planner.plan(chat, NAMED, sampling=Sampling(max_new_tokens=40))
    tokens = out.tokens
    assert out.tool_calls and out.tool_calls[0].name == "alarm_clock_set_for_wake_up", out.text
    pieces = [planner.tokenizer.decode([t]) for t in tokens.completion_ids]
    prefill = len(planner.tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    assert not any(tokens.sampled[:prefill])
    # the first name token is the model's choice (a or z); the rest of the name, up to the
    # arguments' first key, is forced
    assert tokens.sampled[prefill], pieces[prefill]
    text, j = pieces[prefill], prefill + 1
    while not text.endswith('"arguments": {"'):
        assert not tokens.sampled[j], (j, pieces[j], text)
        text += pieces[j]
        j += 1
    assert text.startswith("alarm_clock_set_for_wake_up")
    # the hour's digits are chosen; the call's closing after the last value is forced
    assert any(tokens.sampled[j:])
    assert not tokens.sampled[-1] and "".join(pieces).endswith("}}\n</tool_call>")
    assert_logprobs_match(planner, tokens)


def test_logprobs_equal_a_teacher_forced_forward_cached_or_chunked(exact, model_cache, alarm_chat, two_tools):
    from planner_runtime.planners.local.planner import LocalPlanner

    planner = exact
    sampling = Sampling(max_new_tokens=40)
    planner.plan(alarm_chat, two_tools, sampling=sampling)
    cached = planner.plan(alarm_chat, two_tools, sampling=sampling)  # the prompt's KV from the kept cache
    assert planner.last_reused_tokens > 0
    assert_logprobs_match(planner, cached.tokens)
    # small prefill chunks: the positions scored straddle chunk boundaries
    chunked = LocalPlanner(cache_dir=model_cache, dtype="float32", prefill_chunk=3, reuse_prefix_cache=False).load()
    out = chunked.plan(alarm_chat, two_tools, sampling=sampling)
    assert out.tokens.completion_ids == cached.tokens.completion_ids
    assert_logprobs_match(chunked, out.tokens)
    # an answer the budget ended still has every token scored
    short = planner.plan(alarm_chat, two_tools, sampling=Sampling(max_new_tokens=12))
    assert not short.tool_calls and short.tokens is not None
    assert_logprobs_match(planner, short.tokens)


def test_greedy_logprobs_are_the_max_and_every_unconstrained_token_is_sampled(exact, alarm_chat, two_tools):
    planner = exact
    planner.constrained = False
    try:
        out = planner.plan(alarm_chat, two_tools, sampling=Sampling(max_new_tokens=24))
    finally:
        planner.constrained = True
    tokens = out.tokens
    prefill = len(planner.tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    assert all(tokens.sampled[prefill:]) and not any(tokens.sampled[:prefill])
    reference = teacher_forced(planner, tokens.prompt_ids, tokens.completion_ids)
    start = len(tokens.prompt_ids) - 1
    for j in range(prefill, len(tokens.completion_ids)):
        assert abs(tokens.logprobs[j] - float(reference[start + j].max())) < TOLERANCE, j


def test_the_batch_decoder_gives_the_planners_record_when_asked(exact, alarm_chat, two_tools):
    planner = exact
    from planner_runtime.planners.local.batch import BatchDecoder, PlanRequest
    from planner_runtime.planners.local.grammar import closed_tools

    two_tools = list(closed_tools(tuple(two_tools)))  # as the batch decoder constrains them, so both decode alike
    sampling = Sampling(max_new_tokens=40)
    alone = planner.plan(alarm_chat, two_tools, sampling=sampling).tokens
    decoder = BatchDecoder(planner).load()
    other = [Message(role=Role.user, content="Text 5551234 that I am late.")]
    asked, plain, second = decoder.decode([
        PlanRequest(tuple(alarm_chat), tuple(two_tools), sampling, tokens=True),
        PlanRequest(tuple(alarm_chat), tuple(two_tools), sampling),
        PlanRequest(tuple(other), tuple(two_tools), sampling, tokens=True),
    ])
    assert plain.tokens is None and plain.text == asked.text
    assert asked.tokens.prompt_ids == alone.prompt_ids and asked.tokens.completion_ids == alone.completion_ids
    assert asked.tokens.sampled == alone.sampled
    assert_logprobs_match(planner, asked.tokens)
    assert_logprobs_match(planner, second.tokens)
    assert planner.tokenizer.decode(list(second.tokens.completion_ids)) == second.text
