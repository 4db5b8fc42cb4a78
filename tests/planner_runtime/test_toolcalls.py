"""Parsing model output into tool calls never raises; every failure is a coded error, and what
parses can be stored (finite 64-bit numbers, valid Unicode, bounded depth and size)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_runtime.contract import ErrorCode, ToolCall, ToolSpec
from planner_runtime.planners import PlannerOutput
from planner_runtime.planners.toolcalls import format_tool_call, guard_output, parse_tool_calls, render_tools


def test_format_then_parse_round_trips():
    call = ToolCall(name="type_text", arguments={"element": 3, "text": 'He said "hi" ; rm -rf / 你好 🙂'})
    calls, errors = parse_tool_calls(format_tool_call(call))
    assert errors == [] and len(calls) == 1
    assert calls[0].name == call.name and calls[0].arguments == call.arguments


def test_think_block_is_ignored():
    text = '<think>maybe <tool_call>{"name": "x"}</tool_call></think><tool_call>{"name": "finish", "arguments": {}}</tool_call>'
    calls, errors = parse_tool_calls(text)
    assert [c.name for c in calls] == ["finish"] and errors == []


def test_truncated_json_is_malformed_output():
    calls, errors = parse_tool_calls('<tool_call>\n{"name": "set_alarm", "arguments": {"hour": 7')
    assert calls == [] and errors[0].code is ErrorCode.malformed_output


def test_empty_and_prose_output_are_no_tool_call():
    for text in ("", "   ", "I will set the alarm now."):
        calls, errors = parse_tool_calls(text)
        assert calls == [] and errors[0].code is ErrorCode.no_tool_call


def test_arguments_must_be_an_object():
    calls, errors = parse_tool_calls('<tool_call>{"name": "tap", "arguments": [1]}</tool_call>')
    assert calls == [] and errors[0].code is ErrorCode.invalid_arguments


def test_double_encoded_arguments_are_accepted():
    calls, _ = parse_tool_calls('<tool_call>{"name": "tap", "arguments": "{\\"element\\": 2}"}</tool_call>')
    assert calls[0].arguments == {"element": 2}


def test_several_calls_are_all_returned():
    text = format_tool_call(ToolCall(name="a")) + format_tool_call(ToolCall(name="b"))
    calls, _ = parse_tool_calls(text)
    assert [c.name for c in calls] == ["a", "b"]


def test_render_tools_lists_each_schema():
    text = render_tools([ToolSpec(name="tap", description="Tap", parameters={"type": "object"})])
    line = next(line for line in text.splitlines() if line.startswith("{"))
    assert json.loads(line)["function"]["name"] == "tap"
    assert "<tools>" in text and "<tool_call>" in text


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parser_never_raises_on_any_text(text):
    calls, errors = parse_tool_calls(text)
    assert calls or errors


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(["<tool_call>", "<tool_call>{", '<tool_call>{"name": ', "</tool_call>"]))
def test_parser_never_raises_on_broken_blocks(noise, prefix):
    calls, errors = parse_tool_calls(prefix + noise)
    assert calls or errors


def _block(arguments: str) -> str:
    return '<tool_call>{"name": "set_alarm", "arguments": ' + arguments + "}</tool_call>"


@pytest.mark.parametrize("text, code, says", [
    (_block("[" * 10_000 + "]" * 10_000), ErrorCode.malformed_output, "too deep"),
    ("<tool_call>" + "{" * 10_000, ErrorCode.malformed_output, "not valid JSON"),
    (_block('{"a": ' + "[" * 40 + "]" * 40 + "}"), ErrorCode.malformed_output, "deeper than 32"),
    (_block('{"label": "\\ud800"}'), ErrorCode.invalid_arguments, "surrogate"),
    (_block('{"label": "\udfff"}'), ErrorCode.invalid_arguments, "surrogate"),
    (_block('{"\\udfff": 1}'), ErrorCode.invalid_arguments, "valid Unicode"),
    (_block('{"hour": NaN}'), ErrorCode.invalid_arguments, "arguments.hour: NaN"),
    (_block('{"hour": [1, -Infinity]}'), ErrorCode.invalid_arguments, "arguments.hour[1]: -Infinity"),
    (_block('{"hour": 1e999}'), ErrorCode.invalid_arguments, "1e999"),
    (_block('{"hour": ' + "9" * 5000 + "}"), ErrorCode.invalid_arguments, "5000 digits"),
    (_block('{"hour": 9223372036854775808}'), ErrorCode.invalid_arguments, "64 bits"),
    (_block('{"label": "' + "x" * 1_000_000 + '"}'), ErrorCode.malformed_output, "over the 262144 limit"),
    (_block('"' + "[" * 10_000 + '"'), ErrorCode.malformed_output, "too deep"),
    (_block("7"), ErrorCode.invalid_arguments, "JSON object"),
    ('<tool_call>{"name": "\\ud800", "arguments": {}}</tool_call>', ErrorCode.unknown_tool, "no tool's name"),
])
def test_hostile_output_is_a_coded_error_with_a_hint(text, code, says):
    calls, errors = parse_tool_calls(text)
    assert calls == [] and errors[0].code is code and says in errors[0].hint, errors


def test_numbers_that_json_carries_faithfully_are_kept():
    calls, errors = parse_tool_calls(_block('{"a": 9223372036854775807, "b": -1.5e300, "c": "\\ud83d\\ude00"}'))
    assert errors == [] and calls[0].arguments == {"a": 2**63 - 1, "b": -1.5e300, "c": "\U0001F600"}


_hostile_text = st.lists(
    st.text(st.characters() | st.characters(categories=["Cs"]), max_size=4) | st.sampled_from(["NaN", "-Infinity", "1e999", "[" * 40, '"\\ud800"', ", "]),
    max_size=8,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_hostile_text, st.sampled_from(["", '<tool_call>{"name": "x", "arguments": {"v": ', '<tool_call>{"name": "x", "arguments": "']))
def test_what_parses_is_storable_and_guarded_output_is_storable(noise, prefix):
    text = prefix + noise + ("}}</tool_call>" if prefix else "")
    calls, errors = parse_tool_calls(text)
    assert calls or errors
    for call in calls:
        call.to_json()  # a step holding it can be written
        assert json.loads(json.dumps(call.arguments, allow_nan=False)) == call.arguments
    guard_output(PlannerOutput(text=text, tool_calls=tuple(calls), errors=tuple(errors))).to_json()
