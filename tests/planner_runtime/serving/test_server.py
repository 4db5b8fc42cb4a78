"""`planner-agent serve` as clients see it: the official openai client and raw HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import threading

import httpx
import openai
import pytest

from planner_runtime.contract import ToolCall
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.serving.server import PlannerServer

TOOLS = [
    {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm.", "parameters": {
        "type": "object", "properties": {"hour": {"type": "integer"}, "minutes": {"type": "integer"}}, "required": ["hour"]}}},
    {"type": "function", "function": {"name": "finish", "description": "Done.", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}}}},
]
ASK = [{"role": "system", "content": "You operate a phone."}, {"role": "user", "content": "Wake me at 7:30"}]


@pytest.fixture
def scripted_server():
    script = [ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30})] * 20
    with PlannerServer(ScriptedPlanner(script), model_name="tiny") as server:
        yield server


def test_the_official_client_lists_the_model_and_gets_tool_calls(scripted_server):
    client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list().data] == ["tiny", "planner"]  # planner: the README's alias
    answer = client.chat.completions.create(model="tiny", messages=ASK, tools=TOOLS, tool_choice="required")
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "set_alarm" and json.loads(call.function.arguments) == {"hour": 7, "minutes": 30}
    assert answer.usage.prompt_tokens > 0 and answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    # The next turn sends the call and its result back; the server accepts the API's shapes.
    follow = ASK + [choice.message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "ok"}]
    again = client.chat.completions.create(model="tiny", messages=follow, tools=TOOLS)
    assert again.choices[0].message.tool_calls[0].function.name == "set_alarm"


def test_tool_choice_none_answers_in_text(scripted_server):
    client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused", max_retries=0)
    answer = client.chat.completions.create(model="tiny", messages=ASK, tools=TOOLS, tool_choice="none")
    assert answer.choices[0].message.tool_calls is None and "<tool_call>" in answer.choices[0].message.content


def test_bad_requests_get_openai_style_errors(scripted_server):
    client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-9", messages=ASK)
    with pytest.raises(openai.BadRequestError, match="not among the tools"):
        client.chat.completions.create(model="tiny", messages=ASK, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "pay"}})
    bad = httpx.post(scripted_server.base_url + "/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("the body is not JSON")


def test_concurrent_clients_are_all_answered(scripted_server):
    answers: list[str] = []

    def one() -> None:
        client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused", max_retries=0)
        reply = client.chat.completions.create(model="tiny", messages=ASK, tools=TOOLS)
        answers.append(reply.choices[0].message.tool_calls[0].function.name)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answers == ["set_alarm"] * 8
    assert sum(scripted_server.engine.batches) == 8
