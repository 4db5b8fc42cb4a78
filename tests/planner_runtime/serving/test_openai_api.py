"""`planner-agent serve` held to the API it claims, on real HTTP at 127.0.0.1 (scripted planner).

Strict validation (4xx with the API's error body), limits a raw socket client meets, 24 clients
at once, streaming as the official client parses it, cancellation of a queued request whose
client left, and the model id the README's ``openai://…/planner`` example sends.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import openai
import pytest

from planner_runtime import planners
from planner_runtime.contract import Message, Role, ToolCall, ToolSpec
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.serving.server import PlannerServer

CALL = ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30})
ALARM = {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm.", "parameters": {
    "type": "object", "properties": {"hour": {"type": "integer"}, "minutes": {"type": "integer"}}, "required": ["hour"]}}}
ASK = [{"role": "user", "content": "Wake me at 7:30"}]
BODY_CAP = 256 * 1024


@pytest.fixture(scope="module")
def server():
    with PlannerServer(ScriptedPlanner([CALL] * 10_000), model_name="tiny", max_body_bytes=BODY_CAP, body_timeout_s=1.0) as s:
        yield s


def post(server: PlannerServer, body: bytes | str, content_type: str | None = "application/json") -> httpx.Response:
    headers = {"Content-Type": content_type} if content_type else {}
    return httpx.post(server.base_url + "/chat/completions", content=body, headers=headers, timeout=10)


def refused(response: httpx.Response, status: int = 400) -> dict:
    """The API's error body of a refusal with ``status``."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
    return error


def raw(server: PlannerServer, request: bytes, *, wait_s: float = 5.0) -> bytes:
    """What a raw socket client reads back for ``request`` (until the server closes or goes quiet)."""
    with socket.create_connection((server.host, server.port), timeout=wait_s) as sock:
        sock.sendall(request)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and data.endswith(b"}"):
                    break
        except socket.timeout:
            pass
    return data


def test_wrong_content_types_are_refused(server):
    body = json.dumps({"model": "tiny", "messages": ASK})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        error = refused(post(server, body, content_type), 415)
        assert "Content-Type must be application/json" in error["message"]
    assert post(server, body, "application/json; charset=utf-8").status_code == 200


def test_bodies_that_are_not_a_json_object_are_refused(server):
    assert refused(post(server, "[1, 2]"))["message"] == "the body must be a JSON object, not list"
    assert "not JSON" in refused(post(server, ""))["message"]
    assert "not UTF-8" in refused(post(server, b'{"messages": "\xff"}'))["message"]
    assert "lone surrogate" in refused(post(server, '{"messages": [{"role": "user", "content": "\\ud800"}]}'))["message"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused(server, number):
    error = refused(post(server, f'{{"model": "tiny", "messages": {json.dumps(ASK)}, "temperature": {number}}}'))
    assert "not valid JSON" in error["message"]


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("value", [-5, 0, 1.5, "8", True])
def test_max_tokens_must_be_a_positive_integer(server, field, value):
    error = refused(post(server, json.dumps({"model": "tiny", "messages": ASK, field: value})))
    assert error["param"] == field and field in error["message"]


@pytest.mark.parametrize("parameters, words", [
    ({"type": "objekt"}, "object"),
    ({"type": "object", "properties": [1]}, "properties must be an object"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(("}}}, "regex"),
    ({"type": "object", "required": "hour"}, "required"),
    ({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}, "does not exist"),
    ("hour", "JSON schema object"),
])
def test_invalid_tool_schemas_are_refused(server, parameters, words):
    tool = {"type": "function", "function": {"name": "set_alarm", "parameters": parameters}}
    error = refused(post(server, json.dumps({"model": "tiny", "messages": ASK, "tools": [tool]})))
    assert error["param"] == "tools[0].function.parameters" and words in error["message"]


def test_bad_tool_names_and_messages_are_refused(server):
    for tools, param in (([{"type": "function", "function": {"name": "set alarm!"}}], "tools[0].function.name"),
                         ([ALARM, ALARM], "tools[1].function.name"), ({"a": 1}, "tools")):
        assert refused(post(server, json.dumps({"model": "tiny", "messages": ASK, "tools": tools})))["param"] == param
    for messages, param in (([], "messages"), ([{"role": "robot", "content": "hi"}], "messages[0].role"),
                            ([{"role": "user", "content": 5}], "messages[0].content"),
                            ([{"role": "tool", "content": "ok"}], "messages[0].tool_call_id")):
        assert refused(post(server, json.dumps({"model": "tiny", "messages": messages})))["param"] == param
    for extra, param in (({"n": 2}, "n"), ({"stop": ["\n"]}, "stop"), ({"temperature": 3}, "temperature"),
                         ({"stream_options": {"include_usage": True}}, "stream_options"), ({"tool_choice": "sometimes"}, "tool_choice")):
        assert refused(post(server, json.dumps({"model": "tiny", "messages": ASK, "tools": [ALARM], **extra})))["param"] == param


@pytest.mark.parametrize("fields, param, words", [
    ({"return_token_ids": 1}, "return_token_ids", "true or false"),
    ({"logprobs": "yes"}, "logprobs", "true or false"),
    ({"top_logprobs": 2}, "top_logprobs", "needs logprobs"),
    ({"logprobs": True, "top_logprobs": 2}, "top_logprobs", "only top_logprobs 0"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", "from 0 to 20"),
    ({"return_token_ids": True}, "return_token_ids", "no token records"),
    ({"logprobs": True, "top_logprobs": 0}, "logprobs", "no token records"),
])
def test_token_record_fields_are_read_strictly(server, fields, param, words):
    # the scripted planner keeps no token records: asking for them is refused, never ignored
    error = refused(post(server, json.dumps({"messages": ASK, "tools": [ALARM], **fields})))
    assert error["param"] == param and words in error["message"]
    assert post(server, json.dumps({"messages": ASK, "tools": [ALARM], "logprobs": False, "return_token_ids": False})).status_code == 200


@pytest.mark.parametrize("depth", [100, 100_000])
def test_bodies_nested_too_deep_are_refused(server, depth):
    body = '{"model": "tiny", "messages": ' + "[" * depth + "]" * depth + "}"
    assert "nested more than 64 levels" in refused(post(server, body))["message"]


def test_huge_bodies_get_413(server):
    big = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "x" * BODY_CAP}]})
    assert "at most" in refused(post(server, big), 413)["message"]

    def chunks():  # no Content-Length: the server counts what arrives
        yield b'{"model": "tiny", "messages": [{"role": "user", "content": "'
        for _ in range(64):
            yield b"x" * 8192

    streamed = httpx.post(server.base_url + "/chat/completions", content=chunks(), headers={"Content-Type": "application/json"}, timeout=10)
    assert "over" in refused(streamed, 413)["message"]
    # Announced, never sent: refused before a byte of it is read.
    answer = raw(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 99999999999\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413 ")


@pytest.mark.parametrize("length", [b"-1", b"abc", b"12, 13"])
def test_bad_content_length_is_a_400_on_a_raw_socket(server, length):
    answer = raw(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + length + b"\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]


def test_a_body_shorter_than_its_content_length_gets_408_not_a_hang(server):
    started = time.monotonic()
    answer = raw(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"model\": ")
    assert answer.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < 4
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_timeout"


def test_unknown_routes_and_methods_get_the_api_error_body(server):
    assert "no route" in refused(httpx.get(server.base_url + "/completions"), 404)["message"]
    assert refused(httpx.get(server.base_url + "/chat/completions"), 405)["message"] == "GET is not allowed on /v1/chat/completions"
    assert refused(httpx.get(server.base_url + "/models/gpt-9"), 404)["code"] == "model_not_found"


def test_24_concurrent_clients_are_all_answered_without_resets(server):
    answers: list[int] = []
    failures: list[BaseException] = []
    start = threading.Barrier(24)

    def one() -> None:
        try:
            with httpx.Client(timeout=30) as client:
                start.wait()
                reply = client.post(server.base_url + "/chat/completions", json={"model": "tiny", "messages": ASK, "tools": [ALARM], "max_tokens": 8})
                answers.append(reply.status_code)
        except BaseException as exc:  # noqa: BLE001 - a reset or a timeout is what this test looks for
            failures.append(exc)

    threads = [threading.Thread(target=one) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures and answers == [200] * 24


def test_streaming_with_tools_as_the_official_client_parses_it(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    chunks = list(client.chat.completions.create(model="tiny", messages=ASK, tools=[ALARM], stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id and deltas[0].function.name == "set_alarm"
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {"hour": 7, "minutes": 30}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0 and all(c.usage is None for c in chunks[:-1])
    # The client's own accumulator rebuilds the same message as the answer without streaming.
    with client.chat.completions.stream(model="tiny", messages=ASK, tools=[ALARM]) as stream:
        final = stream.get_final_completion()
    plain = client.chat.completions.create(model="tiny", messages=ASK, tools=[ALARM])
    assert final.choices[0].finish_reason == plain.choices[0].finish_reason == "tool_calls"
    got, want = final.choices[0].message.tool_calls[0], plain.choices[0].message.tool_calls[0]
    assert (got.function.name, got.function.arguments) == (want.function.name, want.function.arguments)


def test_a_stream_is_server_sent_events_ending_with_done(server):
    with httpx.stream("POST", server.base_url + "/chat/completions", json={"model": "tiny", "messages": ASK, "stream": True}) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
        events = [line for line in reply.iter_lines() if line]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    assert json.loads(events[-2][6:])["choices"][0]["finish_reason"] == "stop"  # tool_choice none: text


def test_the_readme_model_id_planner_is_served(server):
    client = planners.create(f"openai://127.0.0.1:{server.port}/planner", timeout=10)
    spec = ToolSpec(name="set_alarm", description="Set an alarm.", parameters=ALARM["function"]["parameters"])
    out = client.plan([Message(role=Role.user, content="Wake me at 7:30")], [spec])
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("set_alarm", {"hour": 7, "minutes": 30})]
    answer = httpx.post(server.base_url + "/chat/completions", json={"model": "planner", "messages": ASK}).json()
    assert answer["model"] == "planner"
    assert refused(httpx.post(server.base_url + "/chat/completions", json={"model": "gpt-9", "messages": ASK}), 404)["code"] == "model_not_found"


class Gated(ScriptedPlanner):
    """Answers its first request only once the test opens the gate; counts the requests it ran."""

    def __init__(self) -> None:
        super().__init__([CALL] * 10)
        self.gate = threading.Event()
        self.ran = 0

    def plan(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        self.ran += 1
        if self.ran == 1:
            self.gate.wait(30)
        return super().plan(*args, **kwargs)


def test_a_queued_request_whose_client_left_is_dropped_unrun():
    planner = Gated()
    with PlannerServer(planner, model_name="tiny") as server:
        first = threading.Thread(target=httpx.post, args=(server.base_url + "/chat/completions",),
                                 kwargs={"json": {"model": "tiny", "messages": ASK}, "timeout": 30})
        first.start()
        deadline = time.monotonic() + 10
        while planner.ran == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(httpx.ReadTimeout):  # queued behind the first; the client gives up and closes
            httpx.post(server.base_url + "/chat/completions", json={"model": "tiny", "messages": ASK}, timeout=0.5)
        deadline = time.monotonic() + 5
        while server.engine.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        planner.gate.set()
        first.join(30)
        after = httpx.post(server.base_url + "/chat/completions", json={"model": "tiny", "messages": ASK}, timeout=10)
        assert after.status_code == 200
        assert server.engine.cancelled == 1 and planner.ran == 2  # the first and the last: the abandoned one never ran


def test_serve_on_a_port_in_use_is_one_clear_line_not_a_traceback():
    import subprocess
    import sys

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "serve", "--port", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "serve", "--port", "70000"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
