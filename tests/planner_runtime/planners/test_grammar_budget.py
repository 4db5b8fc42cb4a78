"""A constrained call always closes within its token budget: whatever tokens the grammar lets a
model pick, with the embedded model's own tokenizer, the call that comes out within
``max_new_tokens`` is closed, parses and matches its tool's schema."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.harness.episode import SYSTEM_PROMPT
from planner_runtime.harness.subagents import Delegate
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools.memory import Recall, Remember
from planner_runtime.harness.tools.screenshot import Screenshot
from planner_runtime.harness.tools.core import AskUser
from planner_runtime.planners import Sampling
from planner_runtime.planners.local import model_store
from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL
from planner_runtime.planners.local.grammar import ToolCallGrammars, reaches_cap
from planner_runtime.planners.local.planner import LocalPlanner
from planner_runtime.planners.toolcalls import CLOSE, OPEN

# every tool an episode can offer; the per-episode ones are built without their episode (their spec needs none)
TOOLS = list(default_toolset()) + [cls.__new__(cls) for cls in (AskUser, Screenshot, Remember, Recall, Delegate)]
SPECS: list[ToolSpec] = [t.spec() for t in TOOLS]
BY_NAME = {s.name: s for s in SPECS}
ARGS = {t.name: t.Args for t in TOOLS}


@pytest.fixture(scope="module")
def tokenizer():
    """The embedded SmolLM2's tokenizer: from the converted model if there is one, else read from the GGUF."""
    from transformers import AutoTokenizer

    converted = model_store.embedded_model_dir()
    if model_store.is_model_dir(converted):
        return AutoTokenizer.from_pretrained(converted)
    gguf = model_store.packaged_gguf()
    if gguf is None:
        pytest.skip(f"embedded model not installed: {model_store.INSTALL_HINT}")
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


@pytest.fixture(scope="module")
def grammars(tokenizer) -> ToolCallGrammars:
    return ToolCallGrammars(tokenizer)


@pytest.fixture(scope="module")
def enders(tokenizer) -> np.ndarray:
    """Tokens that hold a quote, bracket or brace: a model that avoids them keeps writing."""
    texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    return np.array([any(c in t for c in '"]}') for t in texts])


def decode(grammars, tokenizer, enders, tools: list[ToolSpec], budget: int, rng: random.Random) -> tuple[str, bool]:
    """What the local planner's loop does with a grammar, a model replaced by random choices among
    the allowed tokens, mostly ones that keep a value open; the answer's text and whether it closed."""
    planner = LocalPlanner(max_new_tokens=budget)
    matcher = grammars.matcher(tools, planner.string_cap(budget))
    assert matcher.consume_tokens(tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    generated: list[int] = []
    while len(generated) < budget:
        forced = matcher.compute_ff_tokens()[: budget - len(generated)]
        if forced:
            matcher.consume_tokens(forced)
            generated += forced
            if matcher.is_stopped() or len(generated) >= budget:
                break
        allowed = np.frombuffer(matcher.compute_logit_bias(), dtype=np.uint8)[: len(enders)] != 0
        keep_open = np.flatnonzero(allowed & ~enders)
        pool = keep_open if keep_open.size and rng.random() < 0.9 else np.flatnonzero(allowed)
        emitted = grammars.admit(matcher, int(pool[rng.randrange(pool.size)]), budget - len(generated))
        assert emitted is not None, matcher.get_error()
        generated += emitted
        if matcher.is_stopped():
            break
    return TOOL_CALL_PREFILL + tokenizer.decode(generated), matcher.is_stopped()


def assert_valid_call(text: str, closed: bool) -> None:
    assert closed and text.startswith(OPEN + "\n") and text.endswith("\n" + CLOSE), text
    call = json.loads(text[len(OPEN) + 1 : -len(CLOSE) - 1])
    try:
        ARGS[call["name"]].model_validate(call["arguments"])  # what the harness checks a call against
    except ValidationError as exc:
        # a check across fields (checkout after checkin) is beyond a schema: the model's mistake, as Feedback
        assert {e["type"] for e in exc.errors()} <= {"value_error"}, (text, exc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(24, 128), seed=st.integers(0, 2**32))
def test_any_call_the_grammar_admits_closes_within_the_budget(grammars, tokenizer, enders, budget, seed):
    assert_valid_call(*decode(grammars, tokenizer, enders, SPECS, budget, random.Random(seed)))


@pytest.mark.parametrize("name", sorted(BY_NAME))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.integers(0, 64), seed=st.integers(0, 2**32))
def test_each_tools_call_closes_within_the_budget(grammars, tokenizer, name, extra, seed, enders):
    # from the budget the tool's shortest call needs (a hotel search needs ~60 tokens) up to 64 more
    budget = shortest_call(grammars, tokenizer, [BY_NAME[name]]) + extra
    assert_valid_call(*decode(grammars, tokenizer, enders, [BY_NAME[name]], budget, random.Random(seed)))


def shortest_call(grammars, tokenizer, tools: list[ToolSpec]) -> int:
    matcher = grammars.matcher(tools, 8)
    assert matcher.consume_tokens(tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    return len(grammars.closing(matcher, 1000))


def test_a_budget_that_holds_no_call_is_known_before_decoding(grammars, tokenizer):
    hotels = [BY_NAME["search_hotels"]]
    matcher = grammars.matcher(hotels, LocalPlanner(max_new_tokens=24).string_cap(24))
    assert matcher.consume_tokens(tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    assert grammars.closing(matcher, 24) is None  # the planner warns that the answer will be cut
    assert shortest_call(grammars, tokenizer, SPECS) <= 24  # with every tool offered, a short one fits


def test_the_delegate_call_that_was_cut_now_closes(grammars, tokenizer, enders):
    # a model that keeps naming tools for delegate.tools filled the 96-token default budget
    for seed in range(5):
        assert_valid_call(*decode(grammars, tokenizer, enders, [BY_NAME["delegate"]], 96, random.Random(seed)))


LONG_TEXT = ("Hi Grace, the compiler talk moved from Thursday to Friday at 3pm in room 4B; please bring "
             "the slides and the demo laptop, and tell Ada too. Thanks!")


def follow(grammars, tokenizer, tools: list[ToolSpec], target: str, budget: int,
           max_string_chars: int | None = None) -> tuple[dict, bool]:
    """What the local planner's loop does for a model that writes ``target`` (the answer after the
    prefill) token by token: the call's arguments, and whether the planner flags the call cut (its
    closing forced by the budget, or a string or list ended at the grammar's cap)."""
    planner = LocalPlanner(max_new_tokens=budget, max_string_chars=max_string_chars)
    cap = planner.string_cap(budget)
    matcher = grammars.matcher(tools, cap)
    assert matcher.consume_tokens(tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    generated: list[int] = []
    cut = False
    while len(generated) < budget and not matcher.is_stopped():
        forced = matcher.compute_ff_tokens()[: budget - len(generated)]
        if forced:
            matcher.consume_tokens(forced)
            generated += forced
            if matcher.is_stopped() or len(generated) >= budget:
                break
        written = tokenizer.decode(generated)
        rest = target[len(written):] if target.startswith(written) else ""
        ids = tokenizer(rest, add_special_tokens=False).input_ids if rest else []
        token = ids[0] if ids and matcher.validate_tokens([ids[0]]) == 1 else _ending_token(grammars, matcher)
        emitted = grammars.admit(matcher, token, budget - len(generated))
        assert emitted is not None, matcher.get_error()
        cut |= emitted != [token]
        generated += emitted
    text = TOOL_CALL_PREFILL + tokenizer.decode(generated)
    assert matcher.is_stopped() and text.endswith("\n" + CLOSE), text
    call = json.loads(text[len(OPEN) + 1 : -len(CLOSE) - 1])
    if call["name"] in ARGS:
        assert_valid_call(text, True)
    arguments = call["arguments"]
    return arguments, cut or reaches_cap(arguments, cap)


def _ending_token(grammars, matcher) -> int:
    """A model the grammar stops from writing what it meant ends the value (a quote, a bracket)."""
    ending = next((t for t in grammars.closers if matcher.validate_tokens([t]) == 1), None)
    return ending if ending is not None else int(np.flatnonzero(np.frombuffer(matcher.compute_logit_bias(), dtype=np.uint8))[0])


def _send(text: str) -> str:
    return 'send_message", "arguments": {"to": "+15550123", "text": ' + json.dumps(text) + "}}\n" + CLOSE


def test_a_long_message_that_fits_the_budget_is_sent_whole(grammars, tokenizer):
    # 150 characters at the default 96-token budget: the string cap used to end it at 112, unflagged
    arguments, cut = follow(grammars, tokenizer, [BY_NAME["send_message"]], _send(LONG_TEXT), 96)
    assert arguments == {"to": "+15550123", "text": LONG_TEXT} and not cut


@pytest.mark.parametrize("text, budget", [(LONG_TEXT, 48), (LONG_TEXT, 40), (" ".join([LONG_TEXT] * 3), 128)])
def test_a_message_the_budget_cannot_hold_is_whole_or_flagged_cut(grammars, tokenizer, text, budget):
    arguments, cut = follow(grammars, tokenizer, [BY_NAME["send_message"]], _send(text), budget)
    assert arguments["text"] != text and cut, arguments  # it cannot fit: closed early, and it says so


@pytest.mark.slow
def test_the_local_planner_flags_a_message_its_budget_cut(planner):
    # the embedded model copies the message it is asked to send; 40 tokens cannot hold it
    goal = f"Send this text message to +15550123, word for word: {LONG_TEXT}"
    messages = [Message(role=Role.system, content=SYSTEM_PROMPT), Message(role=Role.user, content=goal)]
    out = planner.plan(messages, [BY_NAME["send_message"]], sampling=Sampling(max_new_tokens=40))
    assert len(out.tool_calls) == 1 and out.tool_calls[0].name == "send_message", out.text
    assert out.tool_calls[0].arguments["text"] != LONG_TEXT and out.cut, out.text
    whole = planner.plan(messages, [BY_NAME["send_message"]], sampling=Sampling(max_new_tokens=96))
    assert not whole.cut or whole.tool_calls[0].arguments["text"] != LONG_TEXT, whole.text

    # the server's batch decoder says the same, and its finish_reason is "length"
    from planner_runtime.planners.local.batch import BatchDecoder, PlanRequest

    request = PlanRequest(tuple(messages), (BY_NAME["send_message"],), Sampling(max_new_tokens=40))
    (served,) = BatchDecoder(planner).load().decode([request])
    assert served.tool_calls[0].arguments["text"] != LONG_TEXT and served.cut and served.truncated, served.text


def test_a_list_ended_at_the_grammars_cap_is_flagged_cut(grammars, tokenizer):
    tags = ToolSpec(name="tag_photo", description="Tag a photo.", parameters={
        "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}, "required": ["tags"]})
    names = [chr(ord("a") + i % 26) * (1 + i // 26) for i in range(30)]
    target = 'tag_photo", "arguments": {"tags": ' + json.dumps(names) + "}}\n" + CLOSE
    arguments, cut = follow(grammars, tokenizer, [tags], target, 128, max_string_chars=160)  # 20 items at most
    assert arguments["tags"] != names and cut, arguments


@pytest.mark.parametrize("cap", [100, 120, 140])
def test_a_message_ended_at_a_set_string_cap_is_flagged_cut(grammars, tokenizer, cap):
    arguments, cut = follow(grammars, tokenizer, [BY_NAME["send_message"]], _send(LONG_TEXT), 96, max_string_chars=cap)
    assert len(arguments["text"]) <= cap and cut, arguments
