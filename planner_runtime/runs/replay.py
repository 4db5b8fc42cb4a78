"""Offline replay of a stored trajectory on a fresh phone.

Two modes: :func:`reexecute` runs the recorded tool calls again on a freshly seeded phone and
reports the first step whose feedback or screen differs from the record (is the failure
reproducible, or was it the device?); :func:`replan` replays the first ``k`` calls to rebuild
the state, then lets another planner (or harness release) take over from step ``k`` and
verifies the result, so the two verdicts can be compared.

Calls whose answer came from outside the phone (``ask_user``, memory tools, ``delegate``) are
not re-run: the phone is what replay checks. Re-planning offers the tools the episode
was offered (its recorded list) that run on that phone — app and GUI tools, the chosen skills'
composites, ``screenshot`` — not the user, memory or sub-agent tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from device_farm import Device
from planner_runtime.contract import ErrorCode, Feedback, Step, Trajectory, Verdict
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.assembly import EpisodePlan, plan_replan, replan_limits
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.tools import ToolContext, ToolSet
from planner_runtime.planners import Planner
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.tasks.verifiers import verify
from planner_runtime.tasks.world import task_world
from planner_runtime.trajectories.store import TrajectoryStore


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # "status", "error", "result" or "screen"
    recorded: Any
    replayed: Any


@dataclass(frozen=True)
class ReplayReport:
    trajectory_id: str
    steps_replayed: int
    divergence: Divergence | None
    verdict: Verdict | None  # of the replayed end state, when the trajectory came from a task


# Turns the harness answered without running a tool: nothing to re-execute.
_NOT_RUN = {ErrorCode.no_tool_call, ErrorCode.malformed_output, ErrorCode.too_many_calls, ErrorCode.repeated_action}
# Tools whose answer came from outside the phone (the user, the memory profile, a sub-agent's
# planner): replay keeps the recorded answer instead of asking again.
_FROM_OUTSIDE = {"ask_user", "remember", "recall", "delegate"}


def _compare(index: int, recorded: Feedback, replayed: Feedback) -> Divergence | None:
    if recorded.status != replayed.status:
        return Divergence(index, "status", recorded.status.value, replayed.status.value)
    rec_code = recorded.error.code.value if recorded.error else None
    rep_code = replayed.error.code.value if replayed.error else None
    if rec_code != rep_code:
        return Divergence(index, "error", rec_code, rep_code)
    if recorded.result != replayed.result:
        return Divergence(index, "result", recorded.result, replayed.result)
    rec_screen = recorded.observation.digest if recorded.observation else None
    rep_screen = replayed.observation.digest if replayed.observation else None
    if rec_screen != rep_screen:
        return Divergence(index, "screen", rec_screen, rep_screen)
    return None


def _prepare(trajectory: Trajectory, task: TaskSpec | None, device: Device, from_step: int = 0) -> tuple[EpisodePlan, ToolContext]:
    """Seed, go home, and plan with the tools the episode had: those recorded with it (the
    device's and goal's choice then, the chosen skills' composites, the screenshot tool) that
    this phone can run (see :func:`~planner_runtime.harness.assembly.plan_replan`)."""
    if task is not None:
        seed(task, device)
    device.press("home")
    ctx = ToolContext(device=device, gate=SafetyGate(), world=task_world(task))  # a fresh world, seeded as the task's was
    limits = replan_limits(recorded_steps=len(trajectory.steps), from_step=from_step, task_steps=task.max_steps if task else None)
    return plan_replan(trajectory.goal, ctx, limits=limits, recorded={t.name for t in trajectory.tools}), ctx


def _rerun(steps: tuple[Step, ...], tools: ToolSet, ctx: ToolContext, stop_at_divergence: bool) -> tuple[int, Divergence | None]:
    ctx.observe()
    first: Divergence | None = None
    ran = 0
    for step in steps:
        if step.tool_call is None or (step.feedback.error and step.feedback.error.code in _NOT_RUN):
            continue
        if step.tool_call.name in _FROM_OUTSIDE:
            continue
        replayed = tools.execute(step.tool_call, ctx)
        ran += 1
        diff = _compare(step.index, step.feedback, replayed)
        if diff is not None and first is None:
            first = diff
            if stop_at_divergence:
                break
    return ran, first


def reexecute(trajectory: Trajectory, device: Device, task: TaskSpec | None) -> ReplayReport:
    """Re-run every recorded call on ``device`` (fresh, seeded from ``task``) and compare."""
    plan, ctx = _prepare(trajectory, task, device)
    ran, divergence = _rerun(trajectory.steps, plan.tools, ctx, stop_at_divergence=False)
    verdict = verify(task, device, trajectory, ctx.world) if task is not None else None
    return ReplayReport(trajectory.id, ran, divergence, verdict)


def replan(
    trajectory: Trajectory,
    from_step: int,
    *,
    planner: Planner,
    device: Device,
    identity: EpisodeIdentity,
    store: TrajectoryStore,
    task: TaskSpec | None,
    on_step: Callable[[Step], None] | None = None,
) -> Trajectory:
    """Rebuild the state of step ``from_step`` by replaying earlier calls, then let ``planner``
    continue; the new trajectory (earlier steps copied, of the recorded task on ``identity``'s
    phone) is stored and verified."""
    if not 0 <= from_step < len(trajectory.steps):
        raise PlannerRuntimeError(f"--from-step must be 0..{len(trajectory.steps) - 1} for {trajectory.id}")
    plan, ctx = _prepare(trajectory, task, device, from_step)
    _, divergence = _rerun(trajectory.steps[:from_step], plan.tools, ctx, stop_at_divergence=True)
    if divergence is not None:
        raise PlannerRuntimeError(
            f"cannot rebuild the state of step {from_step}: step {divergence.step} replayed differently "
            f"({divergence.what}: recorded {divergence.recorded!r}, now {divergence.replayed!r})"
        )
    episode = plan.episode(planner=planner, ctx=ctx, store=store, identity=identity.for_task(trajectory.task_id), on_step=on_step,
                           prefix=trajectory.steps[:from_step], history=trajectory.messages_at(from_step))
    result = episode.run()
    if task is not None:
        store.set_verdict(result.id, verify(task, device, result, ctx.world))
        result = store.get(result.id)
    return result
