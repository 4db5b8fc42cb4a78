"""Hostile answers from an OpenAI-compatible server, over real HTTP into a real episode.

Whatever a server relays of a model's output — ``function.arguments`` nested 10,000 deep (as a
string or as an object), ``NaN``/``Infinity``, numbers past 64 bits, lone surrogates, a megabyte
of text, arguments that are not an object — is feedback the model can act on. The episode goes
on, every step is stored in the SQLite file and reads back, nothing hostile is sent back to the
server, and the task still succeeds once the model gets it right.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from planner_runtime.contract import ErrorCode, TrajectoryStatus
from planner_runtime.planners.openai.answer import read_answer
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity
from tests.planner_runtime.planners.fake_openai import FakeOpenAI, call_reply, raw_reply, text_reply

DEEP = "[" * 10_000 + "]" * 10_000
MEGABYTE = "x" * 1_000_000
HOSTILE = [  # (what the server sends, the error code the model gets back)
    (call_reply("set_alarm", '{"hour": ' + DEEP + "}"), ErrorCode.malformed_output),
    (call_reply("set_alarm", '{"hour": ' + DEEP + "}", as_object=True), ErrorCode.malformed_output),
    (call_reply("set_alarm", '{"hour": 7, "minutes": 30, "label": "\\ud800"}'), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", '{"hour": 7, "minutes": NaN}'), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", '{"hour": Infinity, "minutes": -Infinity}', as_object=True), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", '{"hour": 7, "minutes": 1e999}'), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", '{"hour": ' + "9" * 5000 + "}"), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", '{"hour": 7, "minutes": 30, "label": "' + MEGABYTE + '"}'), ErrorCode.malformed_output),
    (call_reply("set_alarm", "[7, 30]"), ErrorCode.invalid_arguments),
    (call_reply("set_alarm", "42", as_object=True), ErrorCode.invalid_arguments),
    (text_reply('"I will set it \\ud800 now"'), ErrorCode.no_tool_call),
    (text_reply(json.dumps('<tool_call>{"name": "set_alarm", "arguments": {"label": "' + MEGABYTE + '"}}</tool_call>')), ErrorCode.malformed_output),
    (raw_reply(b'{"choices": [{"message": {"content": "raw \xed\xa0\x80 surrogate bytes, \xff\xfe not UTF-8"}}]}'), ErrorCode.no_tool_call),
]
SET_ALARM = call_reply("set_alarm", '{"hour": 7, "minutes": 30}')


def _strict(body: bytes) -> object:
    """``body`` as JSON that any reader takes: UTF-8 without lone surrogates, no NaN or Infinity."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} sent to the server")
    return json.loads(body.decode("utf-8"), parse_constant=refuse)


def test_hostile_answers_become_feedback_and_the_task_still_succeeds(device, device_ref, tmp_path):
    path = tmp_path / "trajectories.sqlite"
    with FakeOpenAI([reply for reply, _ in HOSTILE] + [SET_ALARM]) as fake, TrajectoryStore(path) as store:
        with OpenAIPlanner(fake.base_url, "m", timeout=30) as planner:
            traj = run_goal("Set an alarm for 7:30", device=device, identity=EpisodeIdentity(device=device_ref),
                            planner=planner, store=store, task=find_task("clock.set_alarm"), max_steps=len(HOSTILE) + 3)
        requests = list(fake.requests)

    assert traj.status is TrajectoryStatus.finished and traj.verdict.success, traj.verdict
    hostile = traj.steps[: len(HOSTILE)]
    assert [s.feedback.error.code if s.feedback.error else None for s in hostile] == [code for _, code in HOSTILE]
    assert all(s.feedback.error.hint for s in hostile)  # every one says what to fix
    assert "NaN" in hostile[3].feedback.error.hint and "surrogate" in hostile[2].feedback.error.hint
    assert [s.tool_call.name for s in traj.steps[len(HOSTILE):]] == ["set_alarm", "finish"]
    # What the model wrote is kept, cut to size and cleaned: the \ud800 became U+FFFD.
    assert "I will set it \ufffd now" in hostile[10].raw_output
    assert all(len(s.raw_output) < 300_000 for s in traj.steps)

    with TrajectoryStore(path, create=False) as reopened:  # the file reads back, every step in it
        again = reopened.get(traj.id)
    assert [s.feedback for s in again.steps] == [s.feedback for s in traj.steps] and again.verdict.success
    # Every request the client made afterwards was JSON any server accepts: nothing hostile echoed.
    assert len(requests) == len(HOSTILE) + 2
    assert max(len(body) for body in requests) < 200_000  # no megabyte reply sent back in a later prompt
    for body in requests:
        _strict(body)


_char = st.characters() | st.characters(categories=["Cs"])  # lone surrogates, as a JSON decoder makes them
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(_char, max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(_char, max_size=8), inner, max_size=4),
    max_leaves=25,
)
_args = _json | st.text(max_size=30) | st.dictionaries(st.sampled_from(["hour", "label"]), st.floats() | st.text(_char)) | st.sampled_from(
    ['{"hour": NaN}', '{"a": "\\udfff"}', "[" * 3000, '{"n": 1e400}'])
_call = st.fixed_dictionaries({}, optional={
    "id": _json,
    "function": st.fixed_dictionaries({}, optional={"name": _json | st.sampled_from(["set_alarm", ""]), "arguments": _args}),
})
_answer = st.fixed_dictionaries({}, optional={
    "choices": _json | st.lists(st.fixed_dictionaries({}, optional={"message": _json | st.fixed_dictionaries({}, optional={
        "content": _json, "tool_calls": _json | st.lists(_call, max_size=3), "reasoning_content": _json})}), max_size=2),
    "usage": _json | st.fixed_dictionaries({}, optional={"prompt_tokens": _json, "completion_tokens": _json}),
})

_ids = st.lists(st.integers(-2, 2**33) | _json, max_size=4) | _json
_shaped = st.builds(  # answers shaped as the API's, so hostile arguments and token records reach the reader often
    lambda calls, content, ids, prompt, logprobs, mask: {"choices": [{
        "message": {"content": content, "tool_calls": calls}, "token_ids": ids, "prompt_token_ids": prompt,
        "logprobs": {"content": [{"logprob": lp} for lp in logprobs]} if isinstance(logprobs, list) else logprobs,
        "sampled_mask": mask}]},
    st.lists(st.fixed_dictionaries({"id": _json, "function": st.fixed_dictionaries(
        {"name": st.sampled_from(["set_alarm", "\ud800", "x" * 200]), "arguments": _args})}), min_size=1, max_size=3),
    _json, _ids, _ids, st.lists(st.floats() | _json, max_size=4) | _json, st.lists(st.booleans() | _json, max_size=4) | _json,
)


@settings(max_examples=300, deadline=None)
@given(_answer | _shaped | _json)
def test_fuzz_any_answer_even_with_nan_and_surrogates_reads_into_an_output_a_store_can_hold(body):
    out = read_answer(body, tokenizer="t")
    out.to_json()  # what the store does with every step: raises on NaN turned null, or a surrogate
    assert out.tool_calls or out.errors or out.text is not None
    for call in out.tool_calls:
        assert json.loads(json.dumps(call.arguments, allow_nan=False)) == call.arguments
    assert out.usage.prompt_tokens >= 0 and out.usage.completion_tokens >= 0
    if out.tokens is not None:  # a record is whole: one logprob and one mask entry (when given) per completion id
        assert all(isinstance(i, int) and i >= 0 for i in out.tokens.prompt_ids + out.tokens.completion_ids)
        assert len(out.tokens.logprobs) in (0, len(out.tokens.completion_ids))
        assert len(out.tokens.sampled) in (0, len(out.tokens.completion_ids))
