"""The planner-agent command line, run as a user runs it (a subprocess), on the built-in phone."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from device_farm.adb.server import free_port
from planner_runtime.contract import TrajectoryStatus
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.trajectories.store import TrajectoryStore


_HOME = tempfile.mkdtemp(prefix="planner-agent-test-home-")  # memory profiles: never the user's own


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": os.environ.get("PLANNER_AGENT_HOME", _HOME)}
    return subprocess.run(
        [sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _no_adb() -> str:
    """An adb address where nothing listens, so `run` falls back to the built-in phone."""
    return f"127.0.0.1:{free_port()}"


def test_the_cli_starts_without_the_libraries_only_some_commands_need():
    # --help, a usage mistake or `tasks list` answer without the store's sqlalchemy, the
    # simulator's http client, adbutils or torch: each command imports what it uses (~0.5 s a start)
    heavy = ("sqlalchemy", "httpx", "adbutils", "requests", "torch", "transformers")
    probe = f"import sys, planner_runtime.cli.main\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_run_task_with_scripted_planner_on_the_builtin_phone(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "Set."}}]))
    db = tmp_path / "t.sqlite"
    res = cli("run", "--task", "clock.set_alarm", "--planner", "scripted", "--script", str(script), "--virtual", "--store", str(db))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "built-in virtual phone" in res.stderr
    assert "step 1" in res.stdout and "set_alarm" in res.stdout
    assert "verdict: success" in res.stdout
    traj_id = re.search(r"trajectory: (traj_\w+)", res.stdout).group(1)
    shown = cli("show", traj_id, "--store", str(db), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["verdict"]["success"] is True


def test_free_form_goal_runs_without_a_verdict(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "read_screen", "arguments": {}}, {"name": "finish", "arguments": {"answer": "I see the home screen"}}]))
    res = cli("run", "What is on my screen?", "--planner", "scripted", "--script", str(script), "--virtual", "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stderr
    assert "verdict: none" in res.stdout and "I see the home screen" in res.stdout


def test_unknown_task_is_a_clear_error(tmp_path):
    res = cli("run", "--task", "no.such.task", "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 2 and "no task 'no.such.task'" in res.stderr


def test_tasks_list_and_check(tmp_path):
    listed = cli("tasks", "list", "--json")
    assert listed.returncode == 0
    assert {t["id"] for t in json.loads(listed.stdout)} >= {"clock.set_alarm", "contacts.add_contact"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - id: x\n    goal: g\n    domain: d\n    checks: []\n")
    res = cli("tasks", "check", str(bad))
    assert res.returncode == 2 and f"{bad}:5: tasks.0.checks" in res.stderr.replace("\n", "")


@pytest.mark.slow
def test_run_with_the_embedded_local_planner_writes_a_valid_trajectory(tmp_path):
    db = tmp_path / "t.sqlite"
    res = cli("run", "Set an alarm for 7:30", "--max-steps", "2", "--virtual", "--store", str(db), timeout=600)
    assert res.returncode in (0, 4), res.stderr[-3000:] + res.stdout[-3000:]
    traj_id = re.search(r"trajectory: (traj_\w+)", res.stdout).group(1)
    with TrajectoryStore(db) as store:
        traj = store.get(traj_id)
    assert traj.planner == "local" and traj.planner_release.startswith("local")
    assert traj.status in (TrajectoryStatus.finished, TrajectoryStatus.truncated)
    assert res.returncode == (0 if traj.status is TrajectoryStatus.finished else 4)  # truncated: the step limit
    assert 1 <= len(traj.steps) <= 2 and traj.verdict is None  # a free-form goal is never seeded or verified
    for step in traj.steps:
        assert step.raw_output and step.usage.prompt_tokens > 0 and step.usage.completion_tokens > 0
        assert step.feedback.call_id  # every turn was answered, even malformed output


def test_serial_drives_an_attached_phone_with_the_same_code(tmp_path, virtual_phone):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}, {"name": "finish", "arguments": {"answer": "ok"}}]))
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    res = cli("run", "--task", "contacts.add_contact", "--serial", virtual_phone.serial, "--adb", adb, "--allow-reset",
              "--planner", "scripted", "--script", str(script), "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "built-in virtual phone" not in res.stderr
    assert virtual_phone.serial in res.stdout and "verdict: success" in res.stdout


def port_free(port):
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _serve_phone(tmp_path, port, *extra, last=None):
    """`planner-agent phone serve` in the background, once it says it is listening (on ``last``)."""
    log = tmp_path / f"serve-{port}.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", "phone", "serve", "--port", str(port), *extra],
                                stdout=sink, stderr=sink, text=True)
    deadline = time.monotonic() + 20
    line = f"adb connect 127.0.0.1:{last or port}"
    while line not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert line in log.read_text(), log.read_text()
    return proc, log


def test_phone_serve_accepts_adb_connect(tmp_path):
    from device_farm.adb.server import AdbServer

    port = free_port()
    while not port_free(port + 1):
        port = free_port()
    proc, _ = _serve_phone(tmp_path, port, "--count", "2", last=port + 1)
    try:
        with AdbServer() as server:
            serials = [server.connect_device(f"127.0.0.1:{p}") for p in (port, port + 1)]
            for serial in serials:
                out = server.client.device(serial).shell("getprop ro.serialno; echo $?")
                assert out.splitlines()[-1] == "0"
            names = {server.client.device(s).shell("getprop ro.serialno") for s in serials}
            assert names == {f"virtual-{port}", f"virtual-{port + 1}"}
    finally:
        proc.terminate()
        proc.wait(10)


def test_phone_serve_with_adb_keys_lets_only_that_host_in(tmp_path):
    import adbutils

    from device_farm.adb.server import AdbServer
    from tests.device_farm.virtual.raw_adb import keygen

    def host_with_key(name):
        home = tmp_path / name
        keygen(home / ".android" / "adbkey")
        return home

    trusted, stranger = host_with_key("trusted"), host_with_key("stranger")
    port = free_port()
    proc, log = _serve_phone(tmp_path, port, "--adb-keys", str(trusted / ".android" / "adbkey.pub"))
    try:
        assert "authentication required: 1 trusted host key(s)" in log.read_text()
        with AdbServer(home=trusted) as server:
            serial = server.connect_device(f"127.0.0.1:{port}")
            assert server.client.device(serial).shell("echo in") == "in"
        with AdbServer(home=stranger) as server:
            try:
                server.client.connect(f"127.0.0.1:{port}", timeout=10)
            except adbutils.AdbError:
                pass  # adb reports an unauthorized device as a failed connect
            deadline = time.monotonic() + 5
            states = []
            while time.monotonic() < deadline and "unauthorized" not in states:
                states = [d.state for d in server.client.list() if d.serial == f"127.0.0.1:{port}"]
                time.sleep(0.1)
            assert states == ["unauthorized"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_replay_reexecutes_and_replans_from_the_cli(tmp_path):
    db, adb = str(tmp_path / "t.sqlite"), _no_adb()
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 45}}, {"name": "finish", "arguments": {"answer": "ok"}}]))
    res = cli("run", "--task", "clock.set_alarm", "--planner", "scripted", "--script", str(wrong), "--virtual", "--store", db)
    assert res.returncode == 1 and "verdict: failed" in res.stdout, res.stderr
    traj_id = re.search(r"trajectory: (traj_\w+)", res.stdout).group(1)

    again = cli("replay", traj_id, "--adb", adb, "--store", db)
    assert again.returncode == 0, again.stderr
    assert "2 calls re-run, reproduced exactly; verdict now failed" in " ".join(again.stdout.split())

    batch = cli("replay", "--failed", "--since", "2000-01-01", "--adb", adb, "--store", db)
    assert batch.returncode == 0 and traj_id in batch.stdout

    right = tmp_path / "right.json"
    right.write_text(json.dumps([{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "ok"}}]))
    fixed = cli("replay", traj_id, "--from-step", "0", "--planner", "scripted", "--script", str(right), "--adb", adb, "--store", db)
    assert fixed.returncode == 0, fixed.stderr
    flat = " ".join(fixed.stdout.split())
    assert "recorded verdict: False" in flat and "scripted: True" in flat


def test_tasks_audit_flags_a_task_that_passes_without_acting(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks:\n"
        "  - id: weak.alarm\n    goal: Set an alarm\n    domain: clock\n"
        "    setup:\n      - content_insert: {uri: 'content://com.android.deskclock/alarms', values: {hour: 7, minutes: 0, enabled: 1}}\n"
        "    checks:\n      - content: {uri: 'content://com.android.deskclock/alarms'}\n"
        "  - id: real.alarm\n    goal: Set an alarm for 9:00\n    domain: clock\n"
        "    checks:\n      - content: {uri: 'content://com.android.deskclock/alarms', where: 'hour=9'}\n"
    )
    res = cli("tasks", "audit", "--suite", str(suite), "--adb", _no_adb(), "--store", str(tmp_path / "t.sqlite"))
    flat = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stderr
    assert "weak.alarm PASSES WITHOUT ACTING" in flat and "real.alarm ok" in flat and "2 tasks audited, 1 flagged" in flat


def test_builtin_suite_passes_the_audit(tmp_path):
    # every built-in task runs; none passes without acting, and none with an answer check passes
    # by an answer naming everything its setup stored (the audit flags either, and exits 1)
    res = cli("tasks", "audit", "--adb", _no_adb(), "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stdout + res.stderr
    count = len(builtin_suite().tasks)
    assert f"{count} tasks audited, 0 flagged" in " ".join(res.stdout.split())


def test_collect_runs_in_parallel_and_resumes(tmp_path):
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps({"clock.set_alarm": [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
                                                       {"name": "finish", "arguments": {"answer": "ok"}}]}))
    common = ["--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm", "--task", "contacts.add_contact",
              "-n", "2", "--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool")]
    first = cli("collect", "-k", "2", *common)
    flat = " ".join(first.stdout.split())
    assert first.returncode == 0, first.stderr
    assert "2 succeeded, 2 failed, 0 infra episodes retried, 0 skipped" in flat
    coll = re.search(r"collection (coll_\w+)", flat).group(1)
    more = cli("collect", "-k", "3", "--resume", coll, *common)
    assert "1 succeeded, 1 failed, 0 infra episodes retried, 4 skipped" in " ".join(more.stdout.split())


def test_run_delegates_shows_screens_and_nests_the_sub_agent_in_show(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([
        {"name": "delegate", "arguments": {"goal": "Find Grace Hopper's number in Contacts", "tools": ["open_app"], "budget": 3}},
        {"name": "open_app", "arguments": {"app": "Contacts"}},  # the sub-agent
        {"name": "finish", "arguments": {"answer": "+1 555 0199"}},
        {"name": "add_contact", "arguments": {"name": "Admiral Hopper", "phone": "+1 555 0199"}},
        {"name": "finish", "arguments": {"answer": "Saved."}},
    ]))
    db = tmp_path / "t.sqlite"
    res = cli("run", "--task", "subagent.save_number_as_new_contact", "--planner", "scripted", "--script", str(script),
              "--virtual", "--store", str(db))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "verdict: success" in res.stdout
    assert "│ sub-step 1  open_app" in res.stdout  # the live view shows the child's steps as they run
    assert "screen: com.google.android.contacts ·" in res.stdout and "elements" in res.stdout
    traj_id = re.search(r"trajectory: (traj_\w+)", res.stdout).group(1)
    shown = cli("show", traj_id, "--store", str(db)).stdout
    lines = shown.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("step 1  delegate"))
    second = next(i for i, line in enumerate(lines) if line.startswith("step 2  add_contact"))
    nested = "\n".join(lines[first:second])
    assert "│ sub-agent traj_" in nested and "│ sub-step 2  finish" in nested and "└ finished, answer: +1 555 0199" in nested


def test_run_answers_ask_user_from_a_file_or_says_no_user(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "ask_user", "arguments": {"question": "Which time should I use?"}},
                                  {"name": "finish", "arguments": {"answer": "ok"}}]))
    answers = tmp_path / "answers.yaml"
    answers.write_text("'which time': '7:30 please'\n")
    common = ("run", "Set an alarm", "--planner", "scripted", "--script", str(script), "--virtual", "--store", str(tmp_path / "t.sqlite"))
    answered = cli(*common, "--answers", str(answers))
    assert answered.returncode == 0, answered.stderr
    assert "7:30 please" in answered.stdout
    nobody = cli(*common)  # no terminal, no file: the planner hears nobody is there
    assert nobody.returncode == 0 and "no_user" in nobody.stdout


def test_run_stops_at_the_token_limit(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"name": "read_screen", "arguments": {}}] * 5))
    res = cli("run", "Look around", "--planner", "scripted", "--script", str(script), "--virtual",
              "--store", str(tmp_path / "t.sqlite"), "--max-tokens", "50")
    assert res.returncode == 4, res.stderr  # ExitCode.truncated
    assert "status: truncated" in res.stdout and "(1 steps," in res.stdout
