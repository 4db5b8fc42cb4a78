"""`planner-agent serve` with the embedded model, on real HTTP at 127.0.0.1: what only a real
decoder shows — replies cut by ``max_tokens``, calls held to their schemas, rows cancelled when
their clients leave — and the README's ``serve`` + ``run --planner openai://…/planner`` pair."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import openai
import pytest

from device_farm.adb.server import free_port
from planner_runtime.planners.local import model_store

pytestmark = pytest.mark.slow

ALARM = {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm on the phone's clock.",
                                          "parameters": {"type": "object", "properties": {"time": {"type": "string"}}}}}
SYSTEM = {"role": "system", "content": "You operate an Android phone for the user."}
STORY = [{"role": "user", "content": "Tell me a very long story about a cat."}]


@pytest.fixture(scope="module")
def cache(model_cache):
    """The run's converted model (one conversion for every test that wants a cache of its own)."""
    return model_cache


@pytest.fixture(scope="module")
def server(cache):
    from planner_runtime.planners.local.planner import LocalPlanner
    from planner_runtime.serving.server import PlannerServer

    with PlannerServer(LocalPlanner(cache_dir=cache, max_new_tokens=32), model_name="smol") as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=300)


def test_a_reply_cut_by_max_tokens_finishes_with_length(client):
    cut = client.chat.completions.create(model="smol", messages=STORY, max_tokens=3)
    assert cut.choices[0].finish_reason == "length" and cut.usage.completion_tokens == 3
    call = [SYSTEM, {"role": "user", "content": "Set an alarm for 7:30"}]
    cut_call = client.chat.completions.create(model="smol", messages=call, tools=[ALARM], max_tokens=6)
    assert cut_call.choices[0].finish_reason == "length" and cut_call.choices[0].message.tool_calls is None
    whole = client.chat.completions.create(model="smol", messages=call, tools=[ALARM], max_tokens=64)
    assert whole.choices[0].finish_reason == "tool_calls"
    streamed = list(client.chat.completions.create(model="smol", messages=STORY, max_tokens=3, stream=True))
    assert streamed[-1].choices[0].finish_reason == "length"


def test_tool_arguments_hold_no_property_the_schema_does_not_name(client, server):
    call = [SYSTEM, {"role": "user", "content": "Set an alarm for 7:30"}]
    answer = client.chat.completions.create(model="smol", messages=call, tools=[ALARM], max_tokens=64)
    arguments = json.loads(answer.choices[0].message.tool_calls[0].function.arguments)
    assert set(arguments) <= {"time"}  # unconstrained extras, the model copies the schema into them
    # A schema that allows extras keeps them allowed.
    from planner_runtime.contract import Message, Role, ToolSpec
    from planner_runtime.planners import Sampling
    from planner_runtime.planners.local.batch import PlanRequest

    tokenizer = server.planner.tokenizer
    extra = '"time": "7:30", "label": "gym"}}\n</tool_call>'
    for allowed, accepted in ((False, False), (True, True)):
        params = {**ALARM["function"]["parameters"], **({"additionalProperties": True} if allowed else {})}
        spec = ToolSpec(name="set_alarm", description="", parameters=params)
        row = server.engine._decoder._row(PlanRequest((Message(role=Role.user, content="Alarm at 7:30"),), (spec,), Sampling(max_new_tokens=64)))
        head = tokenizer('set_alarm", "arguments": {', add_special_tokens=False).input_ids
        assert row.turn.matcher.consume_tokens(head)
        assert row.turn.matcher.consume_tokens(tokenizer(extra, add_special_tokens=False).input_ids) is accepted


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_decoding_request_whose_client_left_leaves_the_batch(server, client):
    decoder, engine = server.engine._decoder, server.engine
    body = json.dumps({"model": "smol", "messages": STORY, "max_tokens": 1500}).encode()
    with socket.create_connection((server.host, server.port)) as sock:  # a client that asks, then hangs up
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert wait_for(lambda: decoder.live == 1, 120)
    # its 1500 tokens would take minutes; the engine counts the cancellation just after the row
    # leaves the batch, so both are waited for
    assert wait_for(lambda: decoder.live == 0 and engine.cancelled == 1, 5)
    cancelled = engine.cancelled
    # A stream read to its first chunk, then dropped, is cancelled as well.
    with client.chat.completions.create(model="smol", messages=STORY, max_tokens=1500, stream=True) as stream:
        assert next(iter(stream)).choices[0].delta.role == "assistant"
        assert wait_for(lambda: decoder.live == 1, 120)
    assert wait_for(lambda: decoder.live == 0 and engine.cancelled == cancelled + 1, 5)
    started = time.monotonic()
    reply = client.chat.completions.create(model="smol", messages=STORY, max_tokens=4)
    assert reply.choices[0].finish_reason == "length" and time.monotonic() - started < 60


def test_the_readme_serve_and_run_example_works_as_written(cache, tmp_path):
    """`planner-agent serve --port P`, then `planner-agent run "..." --planner openai://127.0.0.1:P/planner`."""
    port = free_port()
    env = {**os.environ, model_store.ENV_CACHE: str(cache), "PLANNER_AGENT_HOME": str(tmp_path / "home")}
    serve = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", "serve", "--port", str(port)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        def up() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
            except httpx.TransportError:
                return serve.poll() is not None  # ended: the assertion below says why
        assert wait_for(up, 240) and serve.poll() is None, serve.communicate(timeout=5)
        run = subprocess.run(
            [sys.executable, "-m", "planner_runtime.cli.main", "run", "Set an alarm for 7:30", "--planner", f"openai://127.0.0.1:{port}/planner",
             "--max-steps", "1", "--virtual", "--store", str(tmp_path / "t.sqlite")],
            capture_output=True, text=True, timeout=600, env=env)
        assert "step 1" in run.stdout and "HTTP 4" not in run.stderr + run.stdout, run.stderr[-2000:] + run.stdout[-2000:]
        assert run.returncode not in (2, 3)  # neither a usage error nor an infra fault
    finally:
        serve.send_signal(signal.SIGINT)
        out, err = serve.communicate(timeout=60)
    assert serve.returncode == 0 and "openai://127.0.0.1:%d/planner" % port in err


def test_logprobs_and_token_ids_come_back_aligned_with_the_answer(server):
    from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL, render_chat
    from planner_runtime.planners.openai.wire import openai_to_messages
    from planner_runtime.serving.requests import parse_chat

    call = [SYSTEM, {"role": "user", "content": "Set an alarm for 7:30"}]
    body = {"model": "smol", "messages": call, "tools": [ALARM], "max_tokens": 64, "logprobs": True, "return_token_ids": True}
    reply = httpx.post(server.base_url + "/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    content, ids, mask = choice["logprobs"]["content"], choice["token_ids"], choice["sampled_mask"]
    assert len(content) == len(ids) == len(mask) and choice["finish_reason"] == "tool_calls"
    assert all(set(c) == {"token", "logprob", "bytes", "top_logprobs"} and c["top_logprobs"] == [] for c in content)
    text = b"".join(bytes(c["bytes"]) for c in content).decode()
    tokenizer = server.planner.tokenizer
    assert text == tokenizer.decode(ids) and text.startswith(TOOL_CALL_PREFILL + 'set_alarm", "arguments": ')
    assert '"arguments": ' + choice["message"]["tool_calls"][0]["function"]["arguments"] + "}" in text
    prefill = len(tokenizer(TOOL_CALL_PREFILL, add_special_tokens=False).input_ids)
    assert [c["logprob"] for c in content[:prefill]] == [0.0] * prefill and not any(mask[:prefill])
    assert any(mask) and not all(mask[prefill:]) and all(c["logprob"] <= 0 for c in content)
    chat = parse_chat(body, ("smol",), token_records=True).plan
    assert tokenizer.decode(choice["prompt_token_ids"]) == render_chat(openai_to_messages(call), chat.tools)
    # only what was asked for comes back
    plain = httpx.post(server.base_url + "/chat/completions", json={**body, "logprobs": False}, timeout=300).json()["choices"][0]
    assert plain["logprobs"] is None and plain["token_ids"] == ids
    # a stream cannot carry them: refused with the field named
    streamed = httpx.post(server.base_url + "/chat/completions", json={**body, "stream": True}, timeout=300)
    assert streamed.status_code == 400 and streamed.json()["error"]["param"] == "logprobs"
