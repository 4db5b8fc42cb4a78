"""`planner-agent tasks` and `skills` as a script uses them (a subprocess): a mistake in a suite or
skill file is one `file:line: field: message` line on stderr with exit 2 and no traceback, `--json`
puts only JSON on stdout, and an audit's exit status says what happened."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from device_farm.adb.server import free_port

_HOME = tempfile.mkdtemp(prefix="planner-agent-test-home-")


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": os.environ.get("PLANNER_AGENT_HOME", _HOME), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _one_error_line(res: subprocess.CompletedProcess[str], start: str) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {start}"), res.stderr
    return lines[0]


TASK = "  - id: t.one\n    goal: \"Find {name}\"\n    params: {name: Ada}\n    domain: contacts\n"
BREAKABLE = ("tasks:\n" + TASK + "    setup:\n"
             "      - content_delete: {uri: \"content://com.android.contacts/raw_contacts\", where: \"display_name = {name}\"}\n"
             "    checks:\n      - answer_contains: \"{name}\"\n")


def test_tasks_check_refuses_a_where_a_parameter_can_break_out_of(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(BREAKABLE)
    line = _one_error_line(cli("tasks", "check", str(path)), f"{path}:7: tasks.0.setup.0.content_delete.where: ")
    assert "outside a quoted literal" in line
    as_json = cli("tasks", "check", str(path), "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] | {"message": ""} == {
        "path": str(path), "line": 7, "field": "tasks.0.setup.0.content_delete.where", "message": ""}
    path.write_text(BREAKABLE.replace("display_name = {name}", "display_name = '{name}'"))
    good = cli("tasks", "check", str(path), "--json")
    assert good.returncode == 0 and json.loads(good.stdout) == {"path": str(path), "ok": True, "tasks": 1}


@pytest.mark.parametrize("body, where", [
    ("tasks:\n  a: 1\n", ":2: tasks: expected a list, got a mapping"),
    ("- 1\n", ":1: tasks.0: expected a mapping (key: value), got a number"),
    ("tasks:\n" + TASK + "    checks: {a: 1}\n", ":6: tasks.0.checks: expected a list, got a mapping"),
    ("tasks:\n" + TASK.replace("{name: Ada}", "[Ada]") + "    checks: [{answer_contains: x}]\n",
     ":4: tasks.0.params: expected a mapping (key: value), got a list"),
    ("tasks:\n" + TASK.replace("{name}", "{name.first}") + "    checks: [{answer_contains: x}]\n",
     ":3: tasks.0.goal: goal template does not render with params"),
    ("tasks:\n" + TASK + "    checks:\n      - answer_contains: \"{nobody}\"\n",
     ":7: tasks.0.checks.0.answer_contains: template does not render: no parameter 'nobody'"),
    ("tasks:\n" + TASK + "    checks: [{file: {path: \"/sdcard/../data/{name}\"}}]\n", ":6: tasks.0.checks.0.file.path: the path '/sdcard/../data/Ada' leaves its folder"),
    (b"tasks:\n  - id: \xff\n", ":2: file: not UTF-8 text"),
])
def test_a_malformed_suite_is_one_clear_line(tmp_path, body, where):
    path = tmp_path / "suite.yaml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    _one_error_line(cli("tasks", "check", str(path)), f"{path}{where}")
    _one_error_line(cli("tasks", "list", "--suite", str(path), "--json"), f"{path}{where}")


def test_missing_suite_and_bad_options_are_usage_errors(tmp_path):
    _one_error_line(cli("tasks", "check", str(tmp_path / "nope.yaml")), f"{tmp_path / 'nope.yaml'}: file: No such file")
    assert cli("tasks", "list", "--split", "bogus").returncode == 2
    _one_error_line(cli("tasks", "audit", "--adb", "localhost:notaport"), "expected host:port")


def test_audit_json_and_exit_status(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks:\n"
        "  - id: weak.alarm\n    goal: Set an alarm\n    domain: clock\n"
        "    setup:\n      - content_insert: {uri: 'content://com.android.deskclock/alarms', values: {hour: 7, minutes: 0, enabled: 1}}\n"
        "    checks:\n      - content: {uri: 'content://com.android.deskclock/alarms'}\n"
        "  - id: needs.app\n    goal: Open it\n    domain: x\n    requires_apps: [com.example.absent]\n"
        "    checks:\n      - answer_contains: done\n"
        "  - id: real.alarm\n    goal: Set an alarm for 9:00\n    domain: clock\n"
        "    checks:\n      - content: {uri: 'content://com.android.deskclock/alarms', where: 'hour=9'}\n"
    )
    res = cli("tasks", "audit", "--suite", str(suite), "--adb", f"127.0.0.1:{free_port()}",
              "--store", str(tmp_path / "t.sqlite"), "--json")
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)  # nothing else on stdout
    assert (report["audited"], report["flagged"], report["could_not_run"]) == (3, 1, 1)
    by_id = {r["task"]: r for r in report["results"]}
    assert by_id["weak.alarm"]["passes_without_acting"] and by_id["real.alarm"]["ran"]
    assert not by_id["needs.app"]["ran"] and "com.example.absent" in by_id["needs.app"]["error"]
    assert "weak.alarm  PASSES WITHOUT ACTING" in res.stderr and "needs.app  COULD NOT RUN" in res.stderr


def test_skills_mistakes_are_one_line_and_check_json(tmp_path):
    _one_error_line(cli("skills", "list", "--dir", str(tmp_path / "nowhere")), f"{tmp_path / 'nowhere'}: no such skills folder")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    _one_error_line(cli("skills", "check", "--dir", str(tmp_path)), f"{tmp_path / 'bad' / 'SKILL.md'}: cannot be read as UTF-8")
    (tmp_path / "bad" / "SKILL.md").write_text("---\n- a list\n---\nbody\n")
    _one_error_line(cli("skills", "list", "--dir", str(tmp_path)), f"{tmp_path / 'bad' / 'SKILL.md'}: the front matter must be a mapping")
    (tmp_path / "bad" / "SKILL.md").write_text("---\nname: bad\ndescription: uses a tool that is not there\ntools: [no_such_tool]\n---\nbody\n")
    res = cli("skills", "check", "--dir", str(tmp_path), "--json")
    assert res.returncode == 2 and "unknown tool 'no_such_tool'" in res.stderr
    assert json.loads(res.stdout)["problems"] == [{"path": str(tmp_path / "bad" / "SKILL.md"), "problem": "unknown tool 'no_such_tool'"}]


def test_tasks_check_reports_every_problem_one_line_each(tmp_path):
    like = BREAKABLE.replace("display_name = {name}", "display_name LIKE '{name}'")
    path = tmp_path / "suite.yaml"
    path.write_text(like + BREAKABLE.replace("tasks:\n", "").replace("t.one", "t.two"))
    res = cli("tasks", "check", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 2, res.stderr
    assert lines[0].startswith(f"error: {path}:7: tasks.0.setup.0.content_delete.where: ") and "LIKE" in lines[0]
    assert lines[1].startswith(f"error: {path}:15: tasks.1.setup.0.content_delete.where: ") and "outside a quoted literal" in lines[1]
    shown = json.loads(cli("tasks", "check", str(path), "--json").stdout)
    assert [(e["line"], e["field"]) for e in shown["errors"]] == [(7, "tasks.0.setup.0.content_delete.where"),
                                                                  (15, "tasks.1.setup.0.content_delete.where")]
