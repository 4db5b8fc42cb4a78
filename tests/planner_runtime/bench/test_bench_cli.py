"""``planner-agent bench`` run as a user runs it (a subprocess) on virtual phones: two scripted
planners side by side with known figures, infra faults reported apart, resume, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from device_farm.adb.server import free_port

FINISH = {"name": "finish", "arguments": {"answer": "ok"}}
ALARM = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, FINISH]
# A solves the two tool tasks and the skill task, not the memory one; B only the alarm tasks.
SCRIPTS_A = {
    "clock.set_alarm": ALARM,
    "contacts.add_contact": [{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}, FINISH],
    "contacts.lookup_number": [{"name": "skill_contacts_lookup", "arguments": {"name": "Grace Hopper"}},
                               {"name": "finish", "arguments": {"answer": "+1 555 0199"}}],
}
SCRIPTS_B = {"clock.set_alarm": ALARM, "memory.usual_wake_alarm": [{"name": "set_alarm", "arguments": {"hour": 6, "minutes": 45}}, FINISH]}
TASKS = ["clock.set_alarm", "contacts.add_contact", "contacts.lookup_number", "memory.usual_wake_alarm"]
PRICES = {"scripted": {"input": 1.0, "output": 4.0}}  # $ per 1M tokens


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_PRICES": json.dumps(PRICES)}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _one_line(res: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert res.returncode == code, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and res.stdout == ""
    said = " ".join(res.stderr.split())
    assert said.startswith("error:"), res.stderr
    return said


@pytest.fixture
def place(tmp_path):
    return ["--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "2"]


@pytest.fixture
def two_planners(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(SCRIPTS_A))
    b.write_text(json.dumps(SCRIPTS_B))
    return ["--planner", "scripted", "--script", str(a), "--planner", "scripted", "--script", str(b),
            *(w for t in TASKS for w in ("--task", t))]


def _figures(group: dict) -> tuple[int, int]:
    return group["n"], group["successes"]


def test_two_planners_side_by_side_with_known_figures_and_a_resume_that_runs_nothing(tmp_path, place, two_planners):
    res = cli(*two_planners, *place, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)  # nothing but JSON on stdout
    a, b = report["planners"]["scripted:a"], report["planners"]["scripted:b"]
    cats = ("overall", "tool", "memory", "skills", "subagent")
    assert [_figures(a["categories"][c]) for c in cats] == [(4, 3), (2, 2), (1, 0), (1, 1), (0, 0)]
    assert [_figures(b["categories"][c]) for c in cats] == [(4, 2), (2, 1), (1, 1), (1, 0), (0, 0)]
    assert {d: _figures(g) for d, g in a["domains"].items()} == {"clock": (2, 1), "contacts": (2, 2)}
    assert {d: _figures(g) for d, g in b["domains"].items()} == {"clock": (2, 2), "contacts": (2, 0)}
    assert {d: _figures(g) for d, g in a["difficulties"].items()} == {"easy": (4, 3)}
    overall = a["categories"]["overall"]
    assert overall["rate"] == 0.75 and overall["ci_low"] == pytest.approx(0.3006, abs=1e-3) and overall["ci_high"] == pytest.approx(0.9544, abs=1e-3)
    assert a["categories"]["subagent"]["rate"] is None and a["categories"]["subagent"]["steps"] is None
    for group in (a["categories"]["overall"], b["categories"]["tool"]):
        assert group["steps"] >= 1 and group["prompt_tokens"] > 0 and group["output_tokens"] > 0
        expected = 1000 * (group["prompt_tokens"] * 1.0 + group["output_tokens"] * 4.0) / 1e6  # the means are linear
        assert group["usd_per_1k"] == pytest.approx(expected)
    assert a["infra"] == {"episodes": 0, "items": [], "unscored": []} and a["collection"] != b["collection"]

    again = cli("--resume", report["bench"], *place, "--json")  # the episodes are stored: nothing runs again
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    for label in ("scripted:a", "scripted:b"):
        assert resumed["planners"][label]["categories"] == report["planners"][label]["categories"]


def test_the_table_shows_both_planners(tmp_path, place, two_planners):
    res = cli(*two_planners, *place)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert any("scripted:a" in line and "scripted:b" in line for line in lines)
    overall = next(line for line in lines if line.strip("│┃ ").startswith("Overall"))
    assert "75% [30–95%] 3/4" in overall and "50% [15–85%] 2/4" in overall


def test_a_planner_that_is_never_reachable_is_scored_for_no_one(tmp_path, place):
    dead = f"openai://127.0.0.1:{free_port()}/m"  # nothing listens there: every attempt is an infra fault
    res = cli("--planner", dead, "--task", "clock.set_alarm", "--planner-timeout", "2", *place, "--json")
    assert res.returncode == 3, res.stderr  # the report is printed, and the exit says infra
    report = json.loads(res.stdout)["planners"][dead]
    assert report["infra"] == {"episodes": 3, "items": ["clock.set_alarm#0"], "unscored": ["clock.set_alarm#0"]}
    assert all(g["n"] == 0 and g["rate"] is None for g in report["categories"].values())  # in no denominator
    assert "--resume bench_" in res.stderr


@pytest.mark.parametrize("args, said", [
    (["--suite", "no-such-suite.yaml"], "--suite no-such-suite.yaml: no such file"),
    (["--split", "validation"], "--split 'validation': choose train, test or all"),
    (["--task", "clock.set_alarm", "--split", "test"], "no task matches --task and --split"),
    (["--task", "no.such_task"], "no task 'no.such_task'"),
    (["--planner", "scripted"], "1 --planner scripted and 0 --script"),
])
def test_bad_input_is_one_line_and_exit_2_with_no_store_left(tmp_path, place, args, said):
    res = cli(*args, *place, timeout=60)
    assert said in _one_line(res)
    assert not (tmp_path / "t.sqlite").exists()


def test_resume_of_an_unknown_bench_is_one_line(tmp_path, place, two_planners):
    first = cli(*two_planners, *place, "--json")
    assert first.returncode == 0, first.stderr
    assert "no bench 'bench_nope'" in _one_line(cli("--resume", "bench_nope", *place, timeout=60))
    assert "leave out --planner" in _one_line(cli("--resume", json.loads(first.stdout)["bench"], "--planner", "local", *place, timeout=60))


def test_per_template_benches_the_first_task_of_each_template_and_a_resume_keeps_the_choice(tmp_path, place):
    a = tmp_path / "a.json"
    a.write_text(json.dumps(SCRIPTS_A))
    chosen = ["--task", "clock.set_alarm@1", "--task", "clock.set_alarm", "--task", "contacts.add_contact@2", "--task", "contacts.add_contact"]
    res = cli("--planner", "scripted", "--script", str(a), *chosen, "--per-template", "1", *place, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    planner = report["planners"]["scripted:a"]
    assert _figures(planner["categories"]["overall"]) == (2, 2)  # clock.set_alarm and contacts.add_contact: the suite's order
    assert "leave out --per-template" in _one_line(cli("--resume", report["bench"], "--per-template", "2", *place, timeout=60))
    again = cli("--resume", report["bench"], *place, "--json")
    assert again.returncode == 0, again.stderr
    assert _figures(json.loads(again.stdout)["planners"]["scripted:a"]["categories"]["overall"]) == (2, 2)


def _alarms(phone) -> str:
    return phone.device.shell("content query --uri content://com.android.deskclock/alarms")


def test_phones_that_are_not_virtual_are_benched_only_with_allow_reset(tmp_path, virtual_phone):
    scripts = tmp_path / "a.json"
    scripts.write_text(json.dumps(SCRIPTS_A))
    virtual_phone.device.shell("content insert --uri content://com.android.deskclock/alarms --bind hour:i:6 --bind minutes:i:10")
    before = _alarms(virtual_phone)
    args = ["--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm",
            "--adb", f"{virtual_phone.adb.host}:{virtual_phone.adb.port}",  # the phone as any adb device, not a virtual one
            "--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "1"]
    said = _one_line(cli(*args, timeout=120))
    assert "--allow-reset" in said and virtual_phone.serial in said
    assert _alarms(virtual_phone) == before and not (tmp_path / "t.sqlite").exists()

    allowed = cli(*args, "--allow-reset", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert _figures(json.loads(allowed.stdout)["planners"]["scripted:a"]["categories"]["overall"]) == (1, 1)


def _judged(tmp_path) -> int:
    import sqlite3

    try:
        with sqlite3.connect(tmp_path / "t.sqlite") as db:
            return db.execute("SELECT count(*) FROM trajectories WHERE success IS NOT NULL").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_ctrl_c_prints_the_command_that_resumes_the_bench(tmp_path, place):
    import shlex
    import signal
    import time

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(SCRIPTS_A))
    b.write_text(json.dumps(SCRIPTS_B))
    args = ["bench", "--planner", "scripted", "--script", str(a), "--planner", "scripted", "--script", str(b),
            "--task", "clock.set_alarm", "-k", "30", *place]
    proc = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _judged(tmp_path) < 2:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, errors = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in errors, errors
    command = next(line.strip() for line in errors.splitlines() if line.strip().startswith("planner-agent bench --resume"))
    assert _judged(tmp_path) < 30  # it stopped early, before the second planner's turn

    res = cli(*shlex.split(command)[2:], "--json")  # the printed command, as the user would paste it
    assert res.returncode == 0, res.stderr
    planners = json.loads(res.stdout)["planners"]  # the second planner, which had not started, ran on resume
    assert [_figures(planners[p]["categories"]["overall"]) for p in ("scripted:a", "scripted:b")] == [(30, 30), (30, 30)]


@pytest.mark.slow
def test_the_embedded_planner_against_a_scripted_one(tmp_path, place):
    # one task and two steps: the short form of a bench with the embedded model, which CI runs
    scripts = tmp_path / "a.json"
    scripts.write_text(json.dumps(SCRIPTS_A))
    res = cli("--planner", "local", "--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm",
              "--max-steps", "2", *place, "--json", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    planners = json.loads(res.stdout)["planners"]
    local = planners["local:embedded-sft"]["categories"]["overall"]  # --planner local: the default release, by name
    assert local["n"] == 1 and 1 <= local["steps"] <= 2 and local["prompt_tokens"] > 0 and local["output_tokens"] > 0
    assert local["usd_per_1k"] == 0.0  # a local model costs nothing unless the table says so
    assert _figures(planners["scripted:a"]["categories"]["overall"]) == (1, 1)


def test_a_policy_lets_every_planner_take_the_sensitive_actions_a_task_needs(tmp_path, place):
    # without one the bench denies them all: a task that sends a text fails for every planner
    text = tmp_path / "text.json"
    text.write_text(json.dumps({"messages.send_text": [
        {"name": "send_message", "arguments": {"to": "+15550123", "text": "Running 10 minutes late"}}, FINISH]}))
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow: [send]\n")
    runs = {}
    for name, extra in (("denied", []), ("allowed", ["--policy", str(policy)])):
        res = cli("--planner", "scripted", "--script", str(text), "--task", "messages.send_text", *extra,
                  "--store", str(tmp_path / f"{name}.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "1", "--json")
        assert res.returncode == 0, res.stderr
        runs[name] = _figures(json.loads(res.stdout)["planners"]["scripted:text"]["categories"]["overall"])
    assert runs == {"denied": (1, 0), "allowed": (1, 1)}
    res = cli("--planner", "scripted", "--script", str(text), "--policy", str(tmp_path / "none.yaml"), *place)
    assert res.returncode == 2 and "Traceback" not in res.stderr
