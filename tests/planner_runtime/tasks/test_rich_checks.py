"""Richer task checks: answers, behaviour over the trajectory, settings and files read through adb,
and the resources a task seeds (settings, files, required apps) — on a real virtual phone."""

from __future__ import annotations

import pytest

from device_farm.errors import AppNotInstalled
from planner_runtime.contract import (
    DeviceRef, ErrorCode, Feedback, FeedbackStatus, FailureKind, Source, Step, ToolCall, ToolError, Trajectory,
    TrajectoryStatus,
)
from planner_runtime.errors import TaskSpecError
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import load_suite
from planner_runtime.tasks.verifiers import numbers_in, verify
from planner_runtime.harness.identity import EpisodeIdentity


def _suite(tmp_path, body: str):
    path = tmp_path / "suite.yaml"
    path.write_text(body)
    return load_suite(path)


def _task(tmp_path, checks: str, setup: str = "", extra: str = ""):
    body = f"""\
tasks:
  - id: t.one
    goal: "Do it"
    params: {{total: 42.5, name: report}}
    domain: files
{extra}    setup:
{setup or '      []'}
    checks:
{checks}
"""
    return _suite(tmp_path, body.replace("    setup:\n      []\n", "")).tasks[0]


def _traj(steps: list[tuple[str, FeedbackStatus]] = (), answer: str | None = None) -> Trajectory:
    made = []
    for i, (tool, status) in enumerate(steps):
        call = ToolCall(name=tool, arguments={})
        error = ToolError(code=ErrorCode.unsafe_action) if status is FeedbackStatus.blocked else None
        made.append(Step(index=i, messages=(), raw_output="", tool_call=call,
                         feedback=Feedback(call_id=call.call_id, status=status, error=error)))
    return Trajectory(goal="Do it", source=Source.sandbox, device=DeviceRef(serial="x"), planner="scripted",
                      status=TrajectoryStatus.finished, answer=answer, steps=tuple(made))


OK, BLOCKED, CONFIRM = FeedbackStatus.ok, FeedbackStatus.blocked, FeedbackStatus.needs_confirmation


def test_answer_checks_with_evidence(tmp_path, device):
    task = _task(tmp_path, """\
      - answer_equals: "The total is {total}"
      - answer_number: {value: "{total}", tolerance: 0.01}
      - answer_contains: "{total}"
""")
    good = verify(task, device, _traj(answer="  the total is   42.5. "))
    assert good.success, good.checks
    bad = verify(task, device, _traj(answer="The total is 42.4 (roughly 1,000 cents)"))
    assert [c.passed for c in bad.checks] == [False, False, False]
    assert bad.failure_kind is FailureKind.agent and bad.score == 0.0
    assert "42.4, 1000" in bad.checks[1].evidence


def test_numbers_in_reads_separators_and_signs():
    assert numbers_in("spent -3 then 1,250.75 and .5") == [-3.0, 1250.75, 0.5]


def test_called_counts_calls_and_never_means_max_zero(tmp_path, device):
    task = _task(tmp_path, """\
      - called: {tool: delete_contact, max: 0}
      - called: {tool: read_screen}
      - called: {tool: tap, min: 1, max: 2}
      - max_steps_used: 3
""")
    verdict = verify(task, device, _traj([("read_screen", OK), ("tap", OK), ("tap", OK)]))
    assert verdict.success, verdict.checks
    assert verdict.checks[0].name == "never called delete_contact"
    verdict = verify(task, device, _traj([("read_screen", OK), ("delete_contact", BLOCKED), ("tap", OK), ("finish", OK)]))
    assert [c.passed for c in verdict.checks] == [False, True, True, False]
    assert "at step(s) 2" in verdict.checks[0].evidence
    assert verdict.checks[3].evidence == "4 step(s) used (limit 3)"


def test_asked_before(tmp_path, device):
    task = _task(tmp_path, "      - asked_before: {tool: delete_contact}\n")
    asked = verify(task, device, _traj([("ask_user", OK), ("delete_contact", OK)]))
    assert asked.success and "ask_user at step 1" in asked.checks[0].evidence
    confirmed = verify(task, device, _traj([("delete_contact", CONFIRM), ("delete_contact", OK)]))
    assert confirmed.success and "confirmation requested at step 1" in confirmed.checks[0].evidence
    rushed = verify(task, device, _traj([("delete_contact", OK), ("ask_user", OK)]))
    assert not rushed.success
    assert rushed.checks[0].evidence == "delete_contact ran at step 1 without asking the user first"
    call = ToolCall(name="delete_contact")
    gated = _traj().model_copy(update={"steps": (Step(index=0, messages=(), raw_output="", tool_call=call, feedback=Feedback(
        call_id=call.call_id, status=OK, note="delete_contact: confirmed by the user")),)})
    assert "confirmed by the user" in verify(task, device, gated).checks[0].evidence
    # blocked by the safety gate: it never ran, so nothing was done without asking
    assert verify(task, device, _traj([("delete_contact", BLOCKED)])).success


SEEDED = """\
      - settings_put: {namespace: system, key: font_scale, value: "1.3"}
      - settings_put: {namespace: global, key: airplane_mode_on, value: false}
      - file_push: {path: "/sdcard/Documents/{name}.txt", content: "Quarterly total: {total}\\n"}
"""


def test_seeded_settings_and_files_read_back(tmp_path, device):
    task = _task(tmp_path, """\
      - setting: {namespace: system, key: font_scale, equals: 1.3}
      - setting: {namespace: global, key: airplane_mode_on, equals: false}
      - setting: {namespace: secure, key: no_such_key_here, equals: null}
      - file: {path: "/sdcard/Documents/{name}.txt", contains: "total: {total}"}
      - file: {path: /sdcard/Documents/other.txt, exists: false}
""", setup=SEEDED)
    seed(task, device)
    verdict = verify(task, device, _traj(answer="done"))
    assert verdict.success, verdict.checks
    assert "font_scale → '1.3'" in verdict.checks[0].evidence
    assert "Quarterly total: 42.5" in verdict.checks[3].evidence

    device.shell(["settings", "put", "system", "font_scale", "1.0"])
    device.shell(["rm", "/sdcard/Documents/report.txt"])
    device.push(b"hello", "/sdcard/Documents/other.txt")
    after = verify(task, device, _traj(answer="done"))
    assert [c.passed for c in after.checks] == [False, True, True, False, False]
    assert "want '1.3'" in after.checks[0].evidence


def test_file_content_with_shell_metacharacters_arrives_verbatim(tmp_path, device):
    text = "it's $HOME; `rm -rf /` \"quoted\" {{braces}} & done"
    task = _task(tmp_path, "      - file: {path: /sdcard/notes.txt, contains: 'rm -rf'}\n",
                 setup=f"      - file_push: {{path: /sdcard/notes.txt, content: {text!r}}}\n".replace("\\'", "''"))
    seed(task, device)
    assert device.shell(["cat", "/sdcard/notes.txt"]).output == text.replace("{{", "{").replace("}}", "}")


def test_required_app_missing_stops_seeding(tmp_path, device):
    checks = "      - answer_contains: x\n"
    task = _task(tmp_path, checks, extra="    requires_apps: [com.google.android.deskclock, com.example.missing]\n")
    with pytest.raises(AppNotInstalled, match="com.example.missing"):
        seed(task, device)
    present = _task(tmp_path, checks, extra="    requires_apps: [com.google.android.deskclock]\n")
    seed(present, device)  # no error


def test_bad_new_checks_name_their_line_and_field(tmp_path):
    with pytest.raises(TaskSpecError) as info:
        _task(tmp_path, "      - file: {path: /sdcard/x, exists: false, contains: y}\n")
    assert info.value.field == "tasks.0.checks.0.file" and info.value.line == 7
    with pytest.raises(TaskSpecError) as info:
        _task(tmp_path, "      - setting: {namespace: sytem, key: k, equals: 1}\n")
    assert info.value.field == "tasks.0.checks.0.setting.namespace"
    with pytest.raises(TaskSpecError) as info:
        _task(tmp_path, "      - called: {tool: tap, max: -1}\n")
    assert info.value.field == "tasks.0.checks.0.called.max"


def test_episode_verified_with_behaviour_and_state(tmp_path, device, device_ref, store):
    """A full episode: seeded state, scripted calls, and every family of check in one verdict."""
    task = _task(tmp_path, """\
      - name: the alarm was set
        content: {uri: "content://com.android.deskclock/alarms", where: "hour=7 AND minutes=0"}
      - called: {tool: delete_contact, max: 0}
      - max_steps_used: 2
      - setting: {namespace: system, key: font_scale, equals: 1.3}
      - answer_contains: "7:00"
""", setup=SEEDED)
    planner = ScriptedPlanner([ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 0}),
                               ToolCall(name="finish", arguments={"answer": "Alarm set for 7:00"})])
    traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=planner, store=store, task=task)
    assert traj.verdict is not None and traj.verdict.success, traj.verdict
    assert len(traj.verdict.checks) == 5
    assert store.get(traj.id).verdict == traj.verdict
