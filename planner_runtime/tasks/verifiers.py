"""Verifier: judge a finished episode by its end state on the phone, its answer and its behaviour.

Three families of checks, each returning a :class:`Check` with evidence a person can read:

- end state read back through adb exactly as on a real phone: ``content`` (``content query``),
  ``setting`` (``settings get``), ``file`` (``ls`` / ``cat``);
- tool results: ``answer_contains``, ``answer_excludes`` (names none of the wrong candidates),
  ``answer_equals``, ``answer_number``;
- behaviour over the trajectory: ``called`` (how often a tool was called; ``max: 0`` = never),
  ``asked_before`` (the user was asked before a tool first ran), ``max_steps_used``.

A device fault during the episode or a check gives ``failure_kind=infra``; a check that cannot
run because the spec is wrong gives ``spec``.
"""

from __future__ import annotations

import re
from typing import Callable

from device_farm import Device
from device_farm.android import content_query, get_setting
from device_farm.errors import DeviceError, ShellCommandError
from planner_runtime.contract import Check, FailureKind, FeedbackStatus, Trajectory, TrajectoryStatus, Verdict
from planner_runtime.tasks.spec import CheckSpec, TaskSpec

ASK_TOOL = "ask_user"
CONFIRMED = "confirmed by the user"  # the safety gate's reason, recorded in the feedback note
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_NOT_RUN = {FeedbackStatus.blocked, FeedbackStatus.needs_confirmation}

CheckFn = Callable[[TaskSpec, CheckSpec, Device, Trajectory], Check]


def _content(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    c = spec.content
    uri, where = task.render(c.uri), task.render_where(c.where) if c.where else None
    rows = content_query(device, uri, where=where)
    ok = len(rows) >= c.min and (c.max is None or len(rows) <= c.max)
    bound = f"{c.min}..{c.max if c.max is not None else '∞'}"
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in rows[:3])
    evidence = f"{len(rows)} row(s) in {uri}" + (f" where {where}" if where else "") + f" (want {bound})"
    return Check(name=spec.name or f"content {uri}", passed=ok, evidence=evidence + (f": {shown}" if shown else ""))


def _answer(trajectory: Trajectory) -> str:
    return trajectory.answer or ""


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".!")


def _answer_contains(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    expected, answer = task.render(spec.answer_contains), _answer(trajectory)
    return Check(name=spec.name or f"answer contains {expected!r}", passed=expected.lower() in answer.lower(),
                 evidence=f"answer: {answer[:200]!r}")


def names(answer: str, term: str) -> bool:
    """``term`` appears in ``answer`` as a whole word or phrase, ignoring case ("Ann" is not
    named by "Anna"; "room 4" is not named by "room 4B")."""
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", answer, re.IGNORECASE) is not None


def _answer_excludes(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """Fails when the answer names any wrong candidate: an answer that lists every candidate
    contains the right one too, and must not pass for it."""
    wrong, answer = [task.render(w) for w in spec.answer_excludes], _answer(trajectory)
    named = [w for w in wrong if names(answer, w)]
    evidence = (f"names {', '.join(repr(w) for w in named)}; " if named else "") + f"answer: {answer[:200]!r}"
    return Check(name=spec.name or f"answer names none of {', '.join(repr(w) for w in wrong)}", passed=not named,
                 evidence=evidence)


def _answer_equals(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """Equal up to case, runs of whitespace and a final full stop."""
    expected, answer = task.render(spec.answer_equals), _answer(trajectory)
    return Check(name=spec.name or f"answer equals {expected!r}", passed=_normal(expected) == _normal(answer),
                 evidence=f"answer: {answer[:200]!r}")


def numbers_in(text: str) -> list[float]:
    """The numbers written in ``text`` (thousands separators allowed: ``1,250.5``)."""
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _answer_number(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """Passes when a number in the answer is within the tolerance of the expected value."""
    n = spec.answer_number
    raw = task.render(n.value) if isinstance(n.value, str) else n.value
    try:
        want = float(raw)
    except ValueError:
        raise ShellCommandError("answer_number", 1, f"expected value {raw!r} is not a number") from None
    found = numbers_in(_answer(trajectory))
    close = [x for x in found if abs(x - want) <= n.tolerance + 1e-9 * max(1.0, abs(want))]
    shown = ", ".join(f"{x:g}" for x in found) or "none"
    return Check(name=spec.name or f"answer is {want:g} ± {n.tolerance:g}", passed=bool(close),
                 evidence=f"numbers in the answer: {shown}; answer: {_answer(trajectory)[:160]!r}")


def _calls(trajectory: Trajectory, tool: str) -> list[int]:
    return [s.index for s in trajectory.steps if s.tool_call is not None and s.tool_call.name == tool]


def _called(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    c = spec.called
    low, high = c.bounds
    at = _calls(trajectory, c.tool)
    ok = len(at) >= low and (high is None or len(at) <= high)
    where = f" at step(s) {', '.join(str(i + 1) for i in at)}" if at else ""
    default = f"never called {c.tool}" if high == 0 else f"called {c.tool} {low}..{high if high is not None else '∞'} time(s)"
    return Check(name=spec.name or default, passed=ok,
                 evidence=f"{c.tool} called {len(at)} time(s){where} (want {low}..{high if high is not None else '∞'})")


def _asked_before(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """The first step that ran the tool (not blocked, not waiting for confirmation) comes after an
    ``ask_user`` call or a feedback asking the user to confirm, or its own feedback records the
    user's confirmation at the safety gate."""
    tool = spec.asked_before.tool
    name = spec.name or f"asked the user before {tool}"
    ran = next((s for s in trajectory.steps if s.tool_call is not None and s.tool_call.name == tool
                and s.feedback.status not in _NOT_RUN), None)
    if ran is None:
        return Check(name=name, passed=True, evidence=f"{tool} never ran")
    if CONFIRMED in ran.feedback.note:  # the safety gate asked, and the user said yes
        return Check(name=name, passed=True, evidence=f"{tool} at step {ran.index + 1}: {ran.feedback.note}")
    for step in trajectory.steps[: ran.index]:
        if step.tool_call is not None and step.tool_call.name == ASK_TOOL:
            return Check(name=name, passed=True, evidence=f"{ASK_TOOL} at step {step.index + 1}, {tool} first ran at step {ran.index + 1}")
        if step.feedback.status is FeedbackStatus.needs_confirmation:
            return Check(name=name, passed=True, evidence=f"confirmation requested at step {step.index + 1}, {tool} first ran at step {ran.index + 1}")
    return Check(name=name, passed=False, evidence=f"{tool} ran at step {ran.index + 1} without asking the user first")


def _max_steps_used(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    n, used = spec.max_steps_used, len(trajectory.steps)
    return Check(name=spec.name or f"at most {n} steps", passed=used <= n, evidence=f"{used} step(s) used (limit {n})")


def _scalar_text(value: object) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _same_value(got: str, want: str) -> bool:
    if got == want:
        return True
    try:
        return float(got) == float(want)
    except ValueError:
        return False


def _setting(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    s = spec.setting
    value = get_setting(device, s.namespace, s.key)
    got = "null" if value is None else value
    want = "null" if s.equals is None else task.render(_scalar_text(s.equals))
    return Check(name=spec.name or f"setting {s.namespace}/{s.key} = {want}", passed=_same_value(got, want),
                 evidence=f"settings get {s.namespace} {s.key} → {got!r} (want {want!r})")


def _file(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    f = spec.file
    path = task.render(f.path)
    listed = device.shell(["ls", "-d", path])
    exists = listed.ok
    name = spec.name or (f"{path} exists" if f.exists else f"{path} does not exist")
    if not f.exists or not exists:
        return Check(name=name, passed=exists == f.exists, evidence=f"ls -d {path}: {listed.output.strip()[:200] or 'exit ' + str(listed.exit_code)}")
    if f.contains is None:
        return Check(name=name, passed=True, evidence=f"ls -d {path}: {listed.output.strip()[:200]}")
    read = device.shell(["cat", path])
    if not read.ok:
        raise ShellCommandError("cat", read.exit_code, read.output)
    want = task.render(f.contains)
    text = read.output
    return Check(name=spec.name or f"{path} contains {want!r}", passed=want in text,
                 evidence=f"{path} ({len(text)} chars): {text[:200]!r}")


CHECKS: dict[str, CheckFn] = {
    "content": _content,
    "answer_contains": _answer_contains,
    "answer_excludes": _answer_excludes,
    "answer_equals": _answer_equals,
    "answer_number": _answer_number,
    "called": _called,
    "asked_before": _asked_before,
    "max_steps_used": _max_steps_used,
    "setting": _setting,
    "file": _file,
}


def run_check(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """One check; a device fault or a check that cannot run raises a DeviceError."""
    return CHECKS[spec.kind](task, spec, device, trajectory)


def verify(task: TaskSpec, device: Device, trajectory: Trajectory) -> Verdict:
    """Run every check of ``task`` against the device after ``trajectory`` ended."""
    if trajectory.status is TrajectoryStatus.infra_error:
        return Verdict(
            success=False,
            score=0.0,
            checks=(Check(name="episode ran", passed=False, evidence="an infrastructure fault (the device or the planner endpoint) ended the episode"),),
            failure_kind=FailureKind.infra,
        )
    checks: list[Check] = []
    for spec in task.checks:
        try:
            checks.append(run_check(task, spec, device, trajectory))
        except DeviceError as exc:
            kind = FailureKind.infra if exc.infra else FailureKind.spec
            checks.append(Check(name=spec.name or spec.kind, passed=False, evidence=f"check could not run: {exc}"))
            return Verdict(success=False, score=0.0, checks=tuple(checks), failure_kind=kind)
    passed = sum(c.passed for c in checks)
    success = passed == len(checks)
    return Verdict(
        success=success,
        score=passed / len(checks),
        checks=tuple(checks),
        failure_kind=None if success else FailureKind.agent,
    )
