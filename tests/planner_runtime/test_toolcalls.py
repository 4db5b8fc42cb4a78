"""Parsing model output into tool calls never raises; every failure is a coded error."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from planner_runtime.contract import ErrorCode, ToolCall, ToolSpec
from planner_runtime.planners.toolcalls import format_tool_call, parse_tool_calls, render_tools


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
