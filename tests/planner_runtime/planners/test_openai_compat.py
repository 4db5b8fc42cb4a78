"""The openai planner: against our own server, against fake servers on real sockets, and httpx mocks."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from planner_runtime import planners
from planner_runtime.contract import ErrorCode, Message, Role, ToolCall, ToolSpec
from planner_runtime.errors import ConfigError, PlannerError
from planner_runtime.planners import PlannerTimeout, PlannerUnavailable
from planner_runtime.planners.openai.answer import read_answer
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.planners.toolcalls import format_tool_call
from planner_runtime.serving.server import PlannerServer
from planner_runtime.planners.openai.wire import messages_to_openai
from planner_runtime.harness.identity import EpisodeIdentity

ALARM = ToolSpec(
    name="set_alarm",
    description="Set an alarm.",
    parameters={"type": "object", "properties": {"hour": {"type": "integer"}, "minutes": {"type": "integer"}}},
)
CHAT = [Message(role=Role.system, content="You operate a phone."), Message(role=Role.user, content="Alarm at 7:30")]


class RecordingPlanner(ScriptedPlanner):
    """The scripted planner, keeping the messages it was given (to check what crossed the wire)."""

    def __init__(self, script):  # noqa: ANN001
        super().__init__(script)
        self.seen: list[list[Message]] = []

    def plan(self, messages, tools, *, sampling=None):  # noqa: ANN001, ANN201
        self.seen.append(list(messages))
        return super().plan(messages, tools, sampling=sampling)


def completion(body: dict) -> httpx.Response:
    return httpx.Response(200, json=body)


OK_BODY = {
    "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "set_alarm", "arguments": '{"hour": 7, "minutes": 30}'}}]}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 17},
}


def test_a_call_and_its_usage_come_back_from_our_own_server_and_ids_round_trip():
    backend = RecordingPlanner([ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30}), "I am done."])
    with PlannerServer(backend, model_name="tiny") as server:
        with OpenAIPlanner(server.base_url, "tiny", timeout=10) as client:
            out = client.plan(CHAT, [ALARM])
            assert [(c.name, c.arguments) for c in out.tool_calls] == [("set_alarm", {"hour": 7, "minutes": 30})]
            assert not out.errors and out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
            call = out.tool_calls[0]
            history = CHAT + [
                Message(role=Role.assistant, content=out.text),
                Message(role=Role.tool, content='{"status": "ok"}', tool_call_id=call.call_id),
            ]
            second = client.plan(history, [ALARM])
    assert second.tool_calls == () and second.errors[0].code is ErrorCode.no_tool_call
    # The server got the earlier call back as a call, and the result as a tool message.
    seen = backend.seen[1]
    assert "<tool_call>" in seen[2].content and '"set_alarm"' in seen[2].content
    assert seen[3].role is Role.tool and seen[3].tool_call_id == call.call_id


def test_assistant_calls_map_to_api_tool_calls_and_unanswerable_results_become_text():
    call = ToolCall(name="set_alarm", arguments={"hour": 7}, call_id="call_a")
    mapped = messages_to_openai(CHAT + [
        Message(role=Role.assistant, content=format_tool_call(call)),
        Message(role=Role.tool, content="ok", tool_call_id="call_a"),
        Message(role=Role.assistant, content="no call here"),
        Message(role=Role.tool, content='{"status": "error"}', tool_call_id="call_b"),
    ])
    assert mapped[2]["tool_calls"][0] == {"id": "call_a", "type": "function", "function": {"name": "set_alarm", "arguments": '{"hour": 7}'}}
    assert mapped[3] == {"role": "tool", "content": "ok", "tool_call_id": "call_a"}
    assert mapped[4] == {"role": "assistant", "content": "no call here"}
    assert mapped[5]["role"] == "user" and "<tool_response>" in mapped[5]["content"]


def test_429_and_500_are_retried_honouring_retry_after_then_the_answer_is_used():
    answers = [httpx.Response(429, headers={"Retry-After": "0"}), httpx.Response(500, text="boom"), completion(OK_BODY)]
    sent = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return answers.pop(0)

    client = OpenAIPlanner("http://fake/v1", "m", backoff_s=0.01, transport=httpx.MockTransport(handler), tool_choice="set_alarm")
    out = client.plan(CHAT, [ALARM])
    assert client.last_attempts == 3 and out.tool_calls[0].call_id == "call_9"
    assert out.usage.prompt_tokens == 120 and out.usage.completion_tokens == 17
    assert sent[0]["tool_choice"] == {"type": "function", "function": {"name": "set_alarm"}}
    assert sent[0]["tools"][0]["function"]["name"] == "set_alarm"


def test_a_400_is_a_clear_error_with_the_servers_message_and_is_not_retried():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": {"message": "tools[0].function.name is required"}})

    client = OpenAIPlanner("http://fake/v1", "m", transport=httpx.MockTransport(handler))
    with pytest.raises(PlannerError, match="HTTP 400: tools\\[0\\].function.name is required") as info:
        client.plan(CHAT, [ALARM])
    assert not isinstance(info.value, (PlannerTimeout, PlannerUnavailable)) and len(calls) == 1


def test_persistent_503_gives_up_after_max_retries_as_unavailable_with_the_status():
    client = OpenAIPlanner("http://fake/v1", "m", max_retries=2, backoff_s=0.01,
                           transport=httpx.MockTransport(lambda r: httpx.Response(503, text="overloaded")))
    with pytest.raises(PlannerUnavailable, match="HTTP 503: overloaded"):
        client.plan(CHAT, [ALARM])
    assert client.last_attempts == 3


class _Flaky(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    failures = 2
    hits: list[str] = []

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.hits.append(self.path)
        if len(self.hits) <= self.failures:
            body, status = b'{"error": {"message": "busy"}}', 503
        else:
            body, status = json.dumps(OK_BODY).encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "0.05")
        self.end_headers()
        self.wfile.write(body)


def test_retries_over_a_real_socket_reach_a_server_that_recovers():
    _Flaky.hits = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        client = OpenAIPlanner(f"http://127.0.0.1:{httpd.server_address[1]}/v1", "m", timeout=5)
        out = client.plan(CHAT, [ALARM])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert _Flaky.hits == ["/v1/chat/completions"] * 3 and out.tool_calls[0].name == "set_alarm"


@pytest.fixture
def silent_server():
    """A socket that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sock.close()


def test_a_server_that_never_answers_times_out_within_the_configured_timeout(silent_server):
    client = OpenAIPlanner(silent_server, "m", timeout=0.5)
    started = time.monotonic()
    with pytest.raises(PlannerTimeout, match="no answer within 0.5 s"):
        client.plan(CHAT, [ALARM])
    assert time.monotonic() - started < 2.0


def test_a_dead_server_is_unavailable_after_the_retries():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    client = OpenAIPlanner(f"http://127.0.0.1:{port}/v1", "m", timeout=5, max_retries=2, backoff_s=0.01)
    with pytest.raises(PlannerUnavailable, match="unreachable.*after 3 attempts") as info:
        client.plan(CHAT, [ALARM])
    assert not isinstance(info.value, PlannerTimeout)


def test_a_silent_planner_server_is_asked_again_then_the_episode_ends_as_infra(silent_server, device, device_ref, store):
    from planner_runtime.harness.episode import Episode, EpisodeLimits
    from planner_runtime.harness.toolbox import default_toolset
    from planner_runtime.harness.tools import ToolContext

    episode = Episode(
        goal="Set an alarm for 7:30", planner=OpenAIPlanner(silent_server, "m", timeout=0.3), tools=default_toolset(),
        ctx=ToolContext(device=device), store=store, identity=EpisodeIdentity(device=device_ref), limits=EpisodeLimits(max_steps=6),
    )
    traj = episode.run()
    assert traj.status.value == "infra_error" and len(traj.steps) == 2  # two turns in a row unanswered
    assert all(s.feedback.error.code is ErrorCode.timeout for s in traj.steps)
    assert traj.messages_at(1) == traj.messages_at(0)  # the same question is asked again


def test_text_tool_calls_from_servers_without_a_tool_parser_are_parsed():
    body = {"choices": [{"message": {"content": '<tool_call>\n{"name": "set_alarm", "arguments": {"hour": 6}}\n</tool_call>'}}]}
    out = read_answer(body)
    assert out.tool_calls[0].arguments == {"hour": 6} and out.usage.prompt_tokens == 0


def test_malformed_arguments_are_errors_not_exceptions():
    body = {"choices": [{"message": {"tool_calls": [
        {"id": "a", "function": {"name": "set_alarm", "arguments": '{"hour": 7'}},
        {"id": "b", "function": {"name": "set_alarm", "arguments": "[1, 2]"}},
        {"id": "c", "function": {"arguments": "{}"}},
    ]}}]}
    out = read_answer(body)
    assert out.tool_calls == ()
    assert [e.code for e in out.errors] == [ErrorCode.malformed_output, ErrorCode.invalid_arguments, ErrorCode.malformed_output]
    assert '{"hour": 7' in out.text  # the raw output is kept for the trajectory


def test_planner_urls_pick_the_openai_backend():
    assert planners.parse_planner_url("openai://127.0.0.1:8000/tiny") == ("openai", {"base_url": "http://127.0.0.1:8000/v1", "model": "tiny"})
    assert planners.parse_planner_url("openai+https://api.example.com/Qwen/Qwen2.5-7B")[1] == {
        "base_url": "https://api.example.com/v1", "model": "Qwen/Qwen2.5-7B"}
    made = planners.create("openai://127.0.0.1:8000/tiny", timeout=30.0)
    assert isinstance(made, OpenAIPlanner) and made.release == "openai:tiny@127.0.0.1:8000" and made.timeout == 30.0
    assert "openai" in planners.available()
    with pytest.raises(ConfigError):
        planners.create("openai://127.0.0.1:8000")


@pytest.mark.parametrize("timeout", [0, -1, 0.0, float("nan"), float("inf"), "30", True, None])
def test_a_nonsense_timeout_is_a_config_error_naming_it(timeout):
    with pytest.raises(ConfigError, match="timeout must be a number of seconds > 0"):
        planners.create("openai://127.0.0.1:8000/tiny", timeout=timeout)


@pytest.mark.parametrize("fault, raised", [
    (httpx.ConnectTimeout("connect timed out"), PlannerUnavailable),  # never got through: down
    (httpx.ConnectError("[Errno -2] Name or service not known"), PlannerUnavailable),
    (httpx.ReadError("[Errno 104] Connection reset by peer"), PlannerUnavailable),
    (httpx.ReadTimeout("read timed out"), PlannerTimeout),  # took the request, said nothing in time
])
def test_transport_faults_are_unavailable_or_timeout(fault, raised):
    def handler(request: httpx.Request) -> httpx.Response:
        raise fault

    client = OpenAIPlanner("http://fake/v1", "m", max_retries=1, backoff_s=0.01, transport=httpx.MockTransport(handler))
    with pytest.raises(raised) as info:
        client.plan(CHAT, [ALARM])
    assert type(info.value) is raised
    if raised is PlannerUnavailable:  # retried, then reported with what went wrong
        assert str(fault) in str(info.value) and client.last_attempts == 2


def test_a_runaway_answer_is_cut_off_and_is_malformed_output_not_memory():
    huge = b'{"choices": [{"message": {"content": "' + b"x" * (9 * 1024 * 1024) + b'"}}]}'
    client = OpenAIPlanner("http://fake/v1", "m", transport=httpx.MockTransport(lambda r: httpx.Response(200, content=huge)))
    out = client.plan(CHAT, [ALARM])
    assert out.tool_calls == () and out.errors[0].code is ErrorCode.malformed_output and "bytes" in out.errors[0].hint
