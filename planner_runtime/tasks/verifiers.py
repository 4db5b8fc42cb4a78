"""Verifier: judge a finished episode by its end state on the phone, its answer and its behaviour.

Three families of checks, each returning a :class:`Check` with evidence a person can read:

- end state read back through adb exactly as on a real phone: ``content`` (``content query``),
  ``setting`` (``settings get``), ``file`` (``ls`` / ``cat``);
- tool results: ``answer_contains``, ``answer_excludes`` (names none of the wrong candidates),
  ``answer_equals``, ``answer_number``;
- behaviour over the trajectory: ``called`` (how often a tool was called; ``max: 0`` = never),
  ``asked_before`` (the user was asked before a tool first ran), ``max_steps_used``.

A device fault during the episode or a check gives ``failure_kind=infra``; a check that cannot
run because the task is wrong (:class:`~planner_runtime.errors.TaskCheckError`: a missing table,
column or app, a ``where`` the provider refuses, a setting key ``settings`` refuses, a file that
cannot be read) gives ``spec``: neither is ever scored against the planner.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from device_farm import Device
from device_farm.android import content_query
from device_farm.errors import DeviceError, ShellCommandError
from planner_runtime.contract import Check, FailureKind, FeedbackStatus, Trajectory, TrajectoryStatus, Verdict
from planner_runtime.errors import TaskCheckError
from planner_runtime.tasks.declarations import CheckSpec
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.tasks.world import world_check

if TYPE_CHECKING:
    from planner_runtime.harness.tools.simulated.world import World

CONTRADICTION = "contradiction"  # a world flag's prefix: an LLM simulator's response the world does not bear out
ASK_TOOL = "ask_user"
CONFIRMED = "confirmed by the user"  # the safety gate's reason, recorded in the feedback note
_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")
_DEGREES = re.compile(r"°[CF]?$")
_LEADING = "\"'([{<$€£~≈"
_TRAILING = "\"'.,;:!?)]}>%*"
_OTHERS_ALLOWED = 1  # values an answer_number answer may give beside the expected one and the goal's
_NOT_RUN = {FeedbackStatus.blocked, FeedbackStatus.needs_confirmation}

CheckFn = Callable[[TaskSpec, CheckSpec, Device, Trajectory], Check]


def _content(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    c = spec.content
    uri, where = task.render(c.uri), task.render_where(c.where) if c.where else None
    try:
        rows = content_query(device, uri, where=where)
    except ShellCommandError as exc:  # the provider ran and refused the query: no such table, column or app
        raise TaskCheckError(f"the provider refused the query on {uri}: {_reason(exc.output)}") from exc
    ok = len(rows) >= c.min and (c.max is None or len(rows) <= c.max)
    bound = f"{c.min}..{c.max if c.max is not None else '∞'}"
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in rows[:3])
    evidence = f"{len(rows)} row(s) in {uri}" + (f" where {where}" if where else "") + f" (want {bound})"
    return Check(name=spec.name or f"content {uri}", passed=ok, evidence=evidence + (f": {shown}" if shown else ""))


def _reason(output: str) -> str:
    """The line of a command's output that says what went wrong: Android's ``content`` prints the
    exception after a generic "Error while accessing provider" line, and its stack after it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if "Exception" in line), lines[0] if lines else "no output")[:240]


def _answer(trajectory: Trajectory) -> str:
    return trajectory.answer or ""


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".!")


def _starts_clear(answer: str, at: int, term: str) -> bool:
    """Nothing glues the match at ``at`` to what comes before: no letter or digit, and no number
    it would continue ("5" is not in "1.5" or "1,5"). Leading zeros are the same number: "9:30"
    is in "09:30"."""
    before = answer[:at]
    if term[:1].isdigit():
        before = before.rstrip("0")
    if _wordy(term[:1]) and _wordy(before[-1:]):
        return False
    return not (term[:1].isdigit() and re.search(r"\d[.,]$", before))


def _ends_clear(answer: str, end: int, term: str, whole_word: bool) -> bool:
    """Nothing glues the match to what follows: a term ending in a digit is never followed by a
    digit or a decimal part ("9:30" is not in "9:305", "99" not in "99.5", but "99" is in
    "99.00"); a whole word is never followed by a letter or digit either."""
    after = answer[end:]
    if term[-1:].isdigit() and re.match(r"\d|[.,]\d", after) and not re.match(r"\.0+(?!\d)", after):
        return False
    return not (whole_word and _wordy(term[-1:]) and _wordy(after[:1]))


def _wordy(char: str) -> bool:
    return char.isalnum() or char == "_"


def contains(answer: str, term: str) -> bool:
    """``term`` starts a word in ``answer``, ignoring case, and no digit is glued to a digit:
    "Dec" is in "December" (a prefix of a word counts, as a month or a name's start is written
    either way) but not in "ADec"; "9:30" is not in "19:30" nor "9:305"; "room 4" is not in "room 45"."""
    return _find(answer, term, whole_word=False)


def names(answer: str, term: str) -> bool:
    """``term`` appears in ``answer`` as a whole word or phrase, ignoring case ("Ann" is not
    named by "Anna"; "room 4" is not named by "room 4B"; "250" is not named by "1,250")."""
    return _find(answer, term, whole_word=True)


def _find(answer: str, term: str, whole_word: bool) -> bool:
    if not term:
        return True
    for m in re.finditer(f"(?={re.escape(term)})", answer, re.IGNORECASE):  # overlapping starts
        if _starts_clear(answer, m.start(), term) and _ends_clear(answer, m.start() + len(term), term, whole_word):
            return True
    return False


def _answer_contains(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """The expected text starts a word of the answer (see :func:`contains`)."""
    expected, answer = task.render(spec.answer_contains), _answer(trajectory)
    return Check(name=spec.name or f"answer contains {expected!r}", passed=contains(answer, expected),
                 evidence=f"answer: {answer[:200]!r}")


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
    """The numbers written in ``text`` as words of their own (thousands separators allowed:
    ``1,250.5``; a currency sign, brackets and closing punctuation around them are dropped).
    Digits inside another word are no number here: ``9:30``, ``2026-05-01``, ``4B``, ``IMG_0042``;
    a temperature's degree sign is dropped (``14°C``)."""
    found = []
    for word in text.split():
        word = _DEGREES.sub("", word.lstrip(_LEADING).rstrip(_TRAILING)).rstrip(_TRAILING)
        if _NUMBER.fullmatch(word):
            found.append(float(word.replace(",", "")))
    return found


def _close(x: float, want: float, tolerance: float) -> bool:
    return abs(x - want) <= tolerance + 1e-9 * max(1.0, abs(want))


def _answer_number(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory) -> Check:
    """Passes when a number in the answer is within the tolerance of the expected value and the
    answer gives at most one other value besides the numbers the goal itself states (a count of
    nights beside a price, a year). Two or more other values fail: an answer that lists 0..20, or
    every amount it saw, or the working of a sum, does not say which one it means."""
    n = spec.answer_number
    raw = task.render(n.value) if isinstance(n.value, str) else n.value
    try:
        want = float(raw)
    except ValueError:
        raise TaskCheckError(f"answer_number: the expected value {raw!r} is not a number") from None
    found = numbers_in(_answer(trajectory))
    stated = numbers_in(task.rendered_goal())
    close = [x for x in found if _close(x, want, n.tolerance)]
    others = sorted({x for x in found if not _close(x, want, n.tolerance) and not any(_close(x, g, 0.0) for g in stated)})
    shown = ", ".join(f"{x:g}" for x in found) or "none"
    extra = (f"; {len(others)} other values besides the goal's ({', '.join(f'{x:g}' for x in others[:8])}): "
             "the answer must say which one it means") if len(others) > _OTHERS_ALLOWED else ""
    return Check(name=spec.name or f"answer is {want:g} ± {n.tolerance:g}",
                 passed=bool(close) and len(others) <= _OTHERS_ALLOWED,
                 evidence=f"numbers in the answer: {shown}{extra}; answer: {_answer(trajectory)[:160]!r}")


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
    read = device.shell(["settings", "get", s.namespace, s.key])
    if not read.ok:  # settings printed its usage or an error, not a value: the key as written cannot be read
        raise TaskCheckError(f"settings get {s.namespace} {s.key} was refused: {_reason(read.output)}")
    got = read.output.strip()  # "null": the key is unset
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
    if not read.ok:  # it exists but cannot be read as a file (a folder, no permission)
        raise TaskCheckError(f"cat {path} failed: {_reason(read.output)}")
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


def run_check(task: TaskSpec, spec: CheckSpec, device: Device, trajectory: Trajectory, world: World | None = None) -> Check:
    """One check; a device fault raises a DeviceError, a check the task wrote wrongly a TaskCheckError."""
    if spec.kind == "world":
        return world_check(task, spec, world)
    return CHECKS[spec.kind](task, spec, device, trajectory)


def _simulator_check(world: World) -> Check:
    """Whether an LLM simulator's responses agreed with the world (see harness.tools.simulated.llm)."""
    wrong = [f for f in world.flags if f.startswith(CONTRADICTION)]
    shown = "; ".join(world.flags[:4]) or "every response agreed with the world state"
    return Check(name="the simulated responses agree with the world state", passed=not wrong, evidence=shown[:600])


def verify(task: TaskSpec, device: Device, trajectory: Trajectory, world: World | None = None) -> Verdict:
    """Run every check of ``task`` against the device (and the episode's simulated ``world``)
    after ``trajectory`` ended. Where an LLM wrote the simulated responses and one of them
    contradicted the world, the episode is not scored (``failure_kind=infra``): the simulator
    misled the planner."""
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
            checks.append(run_check(task, spec, device, trajectory, world))
        except (TaskCheckError, DeviceError) as exc:
            # A DeviceError that is no infra fault refused the command the task made (one too long
            # for a phone): the task's doing as well.
            kind = FailureKind.infra if isinstance(exc, DeviceError) and exc.infra else FailureKind.spec
            checks.append(Check(name=spec.name or spec.kind, passed=False, evidence=f"check could not run: {exc}"))
            return Verdict(success=False, score=0.0, checks=tuple(checks), failure_kind=kind)
    if world is not None and world.simulator is not None:
        honest = _simulator_check(world)
        if not honest.passed:
            return Verdict(success=False, score=0.0, checks=(*checks, honest), failure_kind=FailureKind.infra)
        checks.append(honest)
    passed = sum(c.passed for c in checks)
    success = passed == len(checks)
    return Verdict(
        success=success,
        score=passed / len(checks),
        checks=tuple(checks),
        failure_kind=None if success else FailureKind.agent,
    )
