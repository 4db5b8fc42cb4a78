"""``planner-agent memory ...`` and ``run --profile``, run as a user runs them (subprocesses),
each with its own PLANNER_AGENT_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture
def cli(tmp_path):
    env = {**os.environ, "PLANNER_AGENT_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=240, env=env,
                              stdin=subprocess.DEVNULL)  # no terminal, as in a script

    return run


def _json(res: subprocess.CompletedProcess[str]):
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout)


def test_add_list_forget_export_import(cli, tmp_path):
    wake = _json(cli("memory", "add", "I wake up at 6:45 on weekdays", "--json"))
    assert wake["kind"] == "preference" and wake["provenance"] == "user"
    _json(cli("memory", "add", "My sister Ada lives in London", "--kind", "fact", "--json"))
    milk = _json(cli("memory", "add", "Buy milk", "--kind", "intent", "--trigger", "app:Messages", "--expires", "2031-01-01T00:00", "--json"))
    assert milk["trigger"] == {"kind": "app", "value": "Messages"} and milk["expires_at"].startswith("2031-01-01")
    assert (tmp_path / "home" / "profiles" / "default" / "memory.sqlite").exists()

    assert [m["text"] for m in _json(cli("memory", "list", "--json"))] == ["Buy milk", "My sister Ada lives in London", "I wake up at 6:45 on weekdays"]
    assert [m["kind"] for m in _json(cli("memory", "list", "--kind", "fact", "--json"))] == ["fact"]
    ranked = _json(cli("memory", "list", "--query", "wake up alarm", "--no-embeddings", "--json"))
    assert ranked[0]["id"] == wake["id"] and ranked[0]["score"] > 0
    shown = cli("memory", "list")
    assert "intent" in shown.stdout and "trigger app:Messages" in shown.stdout

    out = tmp_path / "mem.jsonl"
    assert _json(cli("memory", "export", str(out), "--json")) == {"path": str(out), "profile": "default", "count": 3}
    assert len(out.read_text().splitlines()) == 3
    res = cli("memory", "import", str(out), "--profile", "laptop")
    assert res.returncode == 0 and "imported 3 memories into profile 'laptop' (0 already there)" in " ".join(res.stdout.split())
    assert {m["id"] for m in _json(cli("memory", "list", "--profile", "laptop", "--json"))} == {m["id"] for m in _json(cli("memory", "list", "--json"))}

    assert _json(cli("memory", "forget", wake["id"], "--json")) == {"deleted": 1}
    assert _json(cli("memory", "forget", "--query", "sister London", "--yes", "--json")) == {"deleted": 1}
    assert [m["text"] for m in _json(cli("memory", "list", "--json"))] == ["Buy milk"]
    assert len(_json(cli("memory", "list", "--profile", "laptop", "--json"))) == 3  # other profiles untouched


def test_mistakes_are_said_plainly(cli, tmp_path):
    res = cli("memory", "add", "Buy milk", "--kind", "intent")
    assert res.returncode == 2 and "needs a trigger" in res.stderr and "Traceback" not in res.stderr
    res = cli("memory", "add", "x", "--kind", "mood")
    assert res.returncode == 2 and "kinds are preference, episodic, fact, intent" in " ".join(res.stderr.split())
    res = cli("memory", "forget", "mem_missing")
    assert res.returncode == 1 and "not in profile" in " ".join(res.stderr.split())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "fact"}\n')
    res = cli("memory", "import", str(bad))
    assert res.returncode == 2 and "bad.jsonl:1" in " ".join(res.stderr.split())
    res = cli("memory", "list", "--profile", "../x")
    assert res.returncode == 2 and "bad profile name" in res.stderr


class _Model(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose model answers each request with the next tool call."""

    protocol_version = "HTTP/1.1"
    replies: list[dict] = []

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        call = self.replies.pop(0) if self.replies else {"name": "finish", "arguments": {"answer": "done"}}
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(self.replies)}", "type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]}
        body = json.dumps({"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 50, "completion_tokens": 9}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def model_endpoint():
    """``--planner`` for a model behind an OpenAI-compatible server; set ``_Model.replies`` first."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"openai://127.0.0.1:{httpd.server_address[1]}/model"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_run_recalls_from_the_profile_and_records_only_a_model_planned_success(cli, tmp_path, model_endpoint):
    assert cli("memory", "add", "I wake up at 6:45 on weekdays", "--profile", "me").returncode == 0
    calls = [{"name": "remember", "arguments": {"text": "I like my alarms quiet", "kind": "preference"}},
             {"name": "set_alarm", "arguments": {"hour": 6, "minutes": 45}}, {"name": "finish", "arguments": {"answer": "Set for 6:45"}}]
    script = tmp_path / "calls.json"
    script.write_text(json.dumps(calls))
    common = ("--virtual", "--store", str(tmp_path / "t.sqlite"), "--json")
    res = cli("run", "Set the alarm I wake up with and remember I like quiet alarms", "--profile", "me", "--planner", "scripted",
              "--script", str(script), *common)
    traj = _json(res)
    assert "- I wake up at 6:45 on weekdays [preference]" in traj["steps"][0]["messages"][0]["content"]
    assert _json(cli("memory", "list", "--profile", "me", "--kind", "episodic", "--json")) == []  # a scripted replay is no episode of the user's
    kept = _json(cli("memory", "list", "--profile", "me", "--kind", "preference", "--json"))
    assert [m["text"] for m in kept] == ["I like my alarms quiet", "I wake up at 6:45 on weekdays"]  # what the goal asked to remember stays

    _Model.replies = [{"name": "set_alarm", "arguments": {"hour": 6, "minutes": 45}}, {"name": "finish", "arguments": {"answer": "Set for 6:45"}}]
    traj = _json(cli("run", "Set the alarm I wake up with", "--profile", "me", "--planner", model_endpoint, *common))
    episodes = _json(cli("memory", "list", "--profile", "me", "--kind", "episodic", "--json"))
    assert [e["provenance"] for e in episodes] == [traj["id"]] and 'asked "Set the alarm I wake up with"; finished' in episodes[0]["text"]

    _Model.replies = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "Set for 7"}}]
    failed = cli("run", "--task", "clock.set_alarm", "--profile", "me", "--planner", model_endpoint, *common)
    assert failed.returncode == 1 and json.loads(failed.stdout)["verdict"]["success"] is False
    assert len(_json(cli("memory", "list", "--profile", "me", "--kind", "episodic", "--json"))) == 1  # a failure is not recorded

    res = cli("run", "Set the alarm I wake up with", "--profile", "me", "--no-memory", "--planner", model_endpoint, *common)
    assert res.returncode == 0 and "What you know" not in res.stdout
    assert len(_json(cli("memory", "list", "--profile", "me", "--kind", "episodic", "--json"))) == 1


def test_a_free_form_scripted_run_leaves_the_default_profile_alone(cli, tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "read_screen", "arguments": {}}, {"name": "finish", "arguments": {"answer": "Home screen"}}]))
    res = cli("run", "What is on my screen?", "--planner", "scripted", "--script", str(script), "--virtual",
              "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stderr
    assert _json(cli("memory", "list", "--json")) == []


def _one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def test_a_task_that_seeds_memories_leaves_the_profile_named_alone(cli, tmp_path):
    assert cli("memory", "add", "I keep my screen brightness at 80%", "--profile", "me").returncode == 0
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "remember", "arguments": {"text": "I like dim screens", "kind": "preference"}},
                                  {"name": "finish", "arguments": {"answer": "done"}}]))
    res = cli("run", "--task", "memory.settings_usual_brightness", "--profile", "me", "--planner", "scripted", "--script", str(script),
              "--virtual", "--store", str(tmp_path / "t.sqlite"), "--json")
    assert res.returncode == 1, res.stderr  # the brightness was not set: the verdict fails, the run did happen
    assert "seeds its own memories, so it runs on a scratch memory: profile 'me' is neither read nor written" in " ".join(res.stderr.split())
    prompt = json.loads(res.stdout)["steps"][0]["messages"][0]["content"]
    assert "I keep my screen brightness at 30%" in prompt and "80%" not in prompt  # the task's memory, not the user's
    assert [m["text"] for m in _json(cli("memory", "list", "--profile", "me", "--json"))] == ["I keep my screen brightness at 80%"]
    assert _json(cli("memory", "list", "--json")) == []  # nor the default profile


def test_importing_a_file_that_is_not_utf8_is_one_line_and_creates_no_profile(cli, tmp_path):
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b'\n\xff\n')
    line = _one_error_line(cli("memory", "import", str(bad), "--profile", "laptop"))
    assert f"{bad}:2: not UTF-8 text" in line
    assert not (tmp_path / "home" / "profiles" / "laptop").exists()


def test_forget_by_query_without_a_terminal_needs_yes(cli):
    assert cli("memory", "add", "I drink green tea").returncode == 0
    line = _one_error_line(cli("memory", "forget", "--query", "tea", "--json"))
    assert "pass --yes" in line
    assert [m["text"] for m in _json(cli("memory", "list", "--json"))] == ["I drink green tea"]  # nothing deleted
    assert _json(cli("memory", "forget", "--query", "tea", "--yes", "--json")) == {"deleted": 1}
