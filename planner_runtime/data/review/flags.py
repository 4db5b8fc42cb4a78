"""Why a trajectory needs a person: the signals that flag it for review, read from the store.

Three reasons, highest priority first. **safety**: a sensitive action was attempted (the gate
blocked it or asked for confirmation: feedback ``blocked`` / ``needs_confirmation`` or error
``unsafe_action``) or ran because the user confirmed it or a policy allowed it (the gate's
reason in the feedback note). **conflict**: repeats of one task instance (one ``task_id`` in
one collection) disagree on success; infra faults do not count, they say nothing about the
planner. (A reviewer disagreeing with the verifier is the other conflict: the queue escalates
that item to two reviewers when the relabel is decided.) **low_confidence**: a verdict resting
only on the answer text (every check of the task compares the answer: ``answer_contains``,
``answer_excludes``, ``answer_equals``, ``answer_number``), or a mean token log-probability of
the model's sampled tokens below a threshold (steps carry logprobs when the backend gave
them). A replay's divergence is not stored by ``replay``; a caller holding a
:class:`~planner_runtime.runs.replay.ReplayReport` adds it with ``queue.add`` (reason
``low_confidence``). Nothing here writes: :func:`find_flags` returns what
:func:`planner_runtime.data.review.queue.flag` then inserts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Callable, Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.engine import Connection

from planner_runtime.contract import ErrorCode, FeedbackStatus, Step, Trajectory
from planner_runtime.data.review import LOGPROB_THRESHOLD
from planner_runtime.sqlite_file import aware
from planner_runtime.trajectories import query as q
from planner_runtime.trajectories.schema import trajectories


class Reason(str, Enum):
    safety = "safety"
    conflict = "conflict"
    low_confidence = "low_confidence"
    manual = "manual"


# Higher is reviewed first; an action that ran outranks one that was stopped.
PRIORITY = {Reason.safety: 300, Reason.conflict: 200, Reason.low_confidence: 100, Reason.manual: 50}
RAN_SENSITIVE_BONUS = 20
ANSWER_CHECKS = frozenset({"answer_contains", "answer_excludes", "answer_equals", "answer_number"})
# The verifier's default names of those checks, for a task this release's suites no longer have.
_ANSWER_NAME = re.compile(r"^answer (contains|names none of|equals|is) ")
# The safety gate's reasons for letting a sensitive action run (planner_runtime.harness.safety).
GATE_ALLOWED = ("confirmed by the user", "allowed by policy")

# A task id -> the kinds of its checks (None: unknown task).
CheckKinds = Callable[[str], "Sequence[str] | None"]


@dataclass(frozen=True)
class Flag:
    """One reason to look at one trajectory, with the signal in words."""

    trajectory_id: str
    reason: Reason
    detail: str
    priority: int


def builtin_check_kinds(task_id: str) -> Sequence[str] | None:
    """The kinds of ``task_id``'s checks in the built-in suites (``None`` for a task not there)."""
    from planner_runtime.errors import PlannerRuntimeError
    from planner_runtime.tasks.spec import find_task

    try:
        task = find_task(task_id)
    except PlannerRuntimeError:
        return None
    return [next((k for k in type(c).model_fields if k != "name" and getattr(c, k) is not None), "?") for c in task.checks]


def _answer_only(traj: Trajectory, kinds: CheckKinds) -> str | None:
    v = traj.verdict
    if v is None or not v.checks or (v.failure_kind is not None and v.failure_kind.value == "infra"):
        return None  # an infra fault's verdict says nothing about the planner
    known = kinds(traj.task_id) if traj.task_id else None
    if known is not None:
        only = bool(known) and all(k in ANSWER_CHECKS for k in known)
    else:
        only = all(_ANSWER_NAME.match(c.name) for c in v.checks)
    if not only:
        return None
    names = "; ".join(c.name for c in v.checks)
    outcome = "success" if v.success else "failure"
    return f"the verdict ({outcome}) rests only on the answer text: {names} (answer {traj.answer!r})"


def mean_logprob(steps: Iterable[Step]) -> tuple[float, int] | None:
    """The mean log-probability of the model's sampled tokens over ``steps`` and their count
    (every token when no step says which were sampled), or ``None`` without logprobs."""
    total, count = 0.0, 0
    for step in steps:
        t = step.tokens
        if t is None or not t.logprobs:
            continue
        chosen = [lp for lp, s in zip(t.logprobs, t.sampled) if s] if len(t.sampled) == len(t.logprobs) else list(t.logprobs)
        total += sum(chosen)
        count += len(chosen)
    return (total / count, count) if count else None


def _low_logprob(traj: Trajectory, threshold: float) -> str | None:
    found = mean_logprob(traj.steps)
    if found is None or found[0] >= threshold:
        return None
    return f"mean token log-probability {found[0]:.2f} over {found[1]} sampled tokens (below {threshold:g})"


def safety_signals(traj: Trajectory) -> tuple[list[str], bool]:
    """Each step where a sensitive action was attempted, stopped or confirmed, in words, and
    whether one of them ran."""
    said: list[str] = []
    ran = False
    for step in traj.steps:
        fb, call = step.feedback, step.tool_call
        name = call.name if call else "(no call)"
        code = fb.error.code if fb.error else None
        if fb.status in (FeedbackStatus.blocked, FeedbackStatus.needs_confirmation) or code is ErrorCode.unsafe_action:
            hint = f": {fb.error.hint}" if fb.error and fb.error.hint else ""
            said.append(f"step {step.index + 1} {name} {fb.status.value}{hint}")
        elif fb.status is FeedbackStatus.ok and any(reason in fb.note for reason in GATE_ALLOWED):
            ran = True
            said.append(f"step {step.index + 1} {name} ran, {fb.note}")
    return said, ran


def _safety(traj: Trajectory) -> Flag | None:
    said, ran = safety_signals(traj)
    if not said:
        return None
    detail = "sensitive action " + ("ran" if ran else "stopped") + ": " + "; ".join(said)
    return Flag(traj.id, Reason.safety, detail[:2000], PRIORITY[Reason.safety] + (RAN_SENSITIVE_BONUS if ran else 0))


def _conflicts(conn: Connection, chosen: list[str]) -> list[Flag]:
    """Repeats of one task instance in one collection that disagree on success."""
    t = trajectories
    pairs = conn.execute(select(t.c.collection, t.c.task_id).where(t.c.id.in_(chosen), t.c.collection.is_not(None),
                                                                   t.c.task_id.is_not(None)).distinct()).all()
    flags: list[Flag] = []
    for collection, task_id in pairs:
        rows = conn.execute(
            select(t.c.id, t.c.success).where(
                t.c.collection == collection, t.c.task_id == task_id, t.c.parent.is_(None), t.c.success.is_not(None),
                (t.c.failure_kind.is_(None)) | (t.c.failure_kind != "infra"))
            .order_by(t.c.started_at, t.c.id)
        ).all()
        wins = sum(1 for r in rows if r.success)
        if 0 < wins < len(rows):
            detail = f"{len(rows)} repeats of {task_id} in collection {collection} disagree: {wins} succeeded, {len(rows) - wins} failed"
            flags += [Flag(r.id, Reason.conflict, detail, PRIORITY[Reason.conflict]) for r in rows]
    return flags


def candidates(conn: Connection, *, collection: str | None = None, since: datetime | None = None) -> list[str]:
    """Ids of the ended trajectories to look at (a running episode is not judged yet)."""
    t = trajectories
    query = select(t.c.id).where(t.c.status != "running").order_by(t.c.started_at, t.c.id)
    if collection is not None:
        query = query.where(t.c.collection == collection)
    if since is not None:
        query = query.where(t.c.started_at >= aware(since))
    return list(conn.execute(query).scalars())


def find_flags(conn: Connection, *, collection: str | None = None, since: datetime | None = None,
               logprob_threshold: float = LOGPROB_THRESHOLD, check_kinds: CheckKinds = builtin_check_kinds) -> list[Flag]:
    """Every flag the trajectories of ``collection`` (and/or started at or after ``since``; all
    when neither) raise, at most one per trajectory and reason (the signals joined in words)."""
    chosen = candidates(conn, collection=collection, since=since)
    flags: list[Flag] = []
    for tid in chosen:
        traj = q.load(conn, tid)
        if traj is None:
            continue
        safety = _safety(traj)
        if safety is not None:
            flags.append(safety)
        low = [s for s in (_answer_only(traj, check_kinds), _low_logprob(traj, logprob_threshold)) if s]
        if low:
            flags.append(Flag(tid, Reason.low_confidence, "; ".join(low), PRIORITY[Reason.low_confidence]))
    flags += _conflicts(conn, chosen)
    return flags
