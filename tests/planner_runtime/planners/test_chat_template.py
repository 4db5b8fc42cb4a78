"""ChatML rendering with tools: what the local model reads each turn."""

from __future__ import annotations

from planner_runtime.contract import Message, Role
from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL, render_chat


def test_tools_go_into_the_system_turn_and_the_answer_starts_inside_a_call(alarm_chat, two_tools):
    text = render_chat(alarm_chat, two_tools, prefill=TOOL_CALL_PREFILL)
    system_turn = text.split("<|im_end|>")[0]
    assert system_turn.startswith("<|im_start|>system\nYou operate an Android phone")
    assert '"name": "set_alarm"' in system_turn and '"name": "send_sms"' in system_turn
    assert text.endswith('<|im_start|>assistant\n<tool_call>\n{"name": "')


def test_consecutive_tool_results_share_one_user_turn(two_tools):
    messages = [
        Message(role=Role.user, content="Set two alarms."),
        Message(role=Role.assistant, content='<tool_call>\n{"name": "set_alarm"}\n</tool_call>'),
        Message(role=Role.tool, content='{"ok": 1}', tool_call_id="a"),
        Message(role=Role.tool, content='{"ok": 2}', tool_call_id="b"),
    ]
    text = render_chat(messages, two_tools)
    assert (
        '<|im_start|>user\n<tool_response>\n{"ok": 1}\n</tool_response>\n'
        '<tool_response>\n{"ok": 2}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'
    ) in text
    assert text.count("<|im_start|>system") == 1  # a default system turn stands in for the missing one


def test_without_tools_the_system_prompt_stays_plain(alarm_chat):
    assert "<tools>" not in render_chat(alarm_chat, [])
