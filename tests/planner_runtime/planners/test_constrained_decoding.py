"""Grammar-constrained decoding: with the harness's real tools, every answer is one valid call."""

from __future__ import annotations

import logging

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.harness.episode import SYSTEM_PROMPT
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.planners import Sampling

pytestmark = pytest.mark.slow

SCREEN = "Current screen:\n[0] Clock (app icon)\n[1] Contacts (app icon)\n[2] Messages (app icon)"
SAMPLING = Sampling(max_new_tokens=64)


def chat(goal: str, *history: Message) -> list[Message]:
    return [
        Message(role=Role.system, content=SYSTEM_PROMPT),
        Message(role=Role.user, content=f"{goal}\n\n{SCREEN}"),
        *history,
    ]


def assert_one_valid_call(out) -> None:
    tools = default_toolset()
    assert not out.errors, out.text
    assert len(out.tool_calls) == 1, out.text
    call = out.tool_calls[0]
    tools[call.name].Args.model_validate(call.arguments)  # raises if the arguments are wrong


def test_the_alarm_goal_gets_one_schema_valid_call(planner):
    out = planner.plan(chat("Set an alarm for 7:30"), default_toolset().specs(), sampling=SAMPLING)
    assert_one_valid_call(out)
    assert out.text.endswith("</tool_call>")
    # forced tokens were appended without a forward pass each, and all count as completion tokens
    assert planner.last_forced_tokens > 0
    generated = out.usage.completion_tokens - len(planner.tokenizer('<tool_call>\n{"name": "', add_special_tokens=False).input_ids)
    assert planner.last_forward_passes + planner.last_forced_tokens == generated
    assert out.timings["grammar_s"] >= 0


@pytest.mark.parametrize(
    "goal, history",
    [
        ("Add a contact named Dana Lee, phone 555 0100", ()),
        ("Open the Messages app", ()),
        (
            "Set an alarm for 6:15 called Gym",
            (
                Message(role=Role.assistant, content='<tool_call>\n{"name": "read_screen", "arguments": {}}\n</tool_call>'),
                Message(role=Role.tool, content='{"status": "ok"}\nScreen:\n[0] Clock (app icon)'),
            ),
        ),
        (
            "What time is my alarm?",
            (
                Message(role=Role.assistant, content='<tool_call>\n{"name": "set_alarm", "arguments": {"hour": "7"}}\n</tool_call>'),
                Message(role=Role.tool, content='{"status": "error", "error": {"code": "invalid_arguments", "hint": "minutes: field required"}}'),
            ),
        ),
    ],
)
def test_other_goals_and_histories_also_get_valid_calls(planner, goal, history):
    assert_one_valid_call(planner.plan(chat(goal, *history), default_toolset().specs(), sampling=SAMPLING))


def test_constrained_output_is_deterministic_greedy_and_seeded(planner):
    messages, specs = chat("Set an alarm for 7:30"), default_toolset().specs()
    assert planner.plan(messages, specs, sampling=SAMPLING).text == planner.plan(messages, specs, sampling=SAMPLING).text
    hot = Sampling(temperature=1.2, max_new_tokens=64, seed=5)
    first, second = planner.plan(messages, specs, sampling=hot), planner.plan(messages, specs, sampling=hot)
    assert first.text == second.text
    assert_one_valid_call(first)


def test_unconstrained_decoding_still_works(planner, monkeypatch, alarm_chat, two_tools):
    monkeypatch.setattr(planner, "constrained", False)
    out = planner.plan(alarm_chat, two_tools, sampling=Sampling(max_new_tokens=24))
    assert out.text.startswith('<tool_call>\n{"name": "')
    assert planner.last_forced_tokens == 0
    assert planner.last_forward_passes == out.usage.completion_tokens - len(planner.tokenizer('<tool_call>\n{"name": "', add_special_tokens=False).input_ids)
    assert "grammar_s" not in out.timings


def test_a_schema_the_grammar_cannot_express_falls_back_to_unconstrained(planner, alarm_chat, caplog):
    odd = ToolSpec(
        name="odd",
        description="A tool whose schema uses a regex feature the grammar compiler lacks.",
        parameters={"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}},
    )
    with caplog.at_level(logging.WARNING, logger="planner_runtime.planners.local.planner"):
        out = planner.plan(alarm_chat, [odd], sampling=Sampling(max_new_tokens=8))
    assert out.text.startswith("<tool_call>")
    assert planner.last_forced_tokens == 0
    assert any("unconstrained" in r.message for r in caplog.records)
