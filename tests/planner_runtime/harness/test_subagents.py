"""Sub-agents end to end on the virtual phone with the scripted planner: the parent delegates the
lookup of a number (Contacts, through the screen) to a child episode with its own context, tool
subset and budget, then saves the number as a new contact; the child's trajectory is stored with
a parent link and its result comes back as the delegate call's feedback; what the child's turns
cost counts in the parent's totals, kept apart from the parent's own."""

from __future__ import annotations

import pytest

from device_farm.android import launch_app
from planner_runtime.contract import ErrorCode, FeedbackStatus, Role, TrajectoryStatus
from planner_runtime.cost import cost_report
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import find_task
from planner_runtime.harness.identity import EpisodeIdentity

TASK = find_task("subagent.save_number_as_new_contact")
LOOKUP = "Find Grace Hopper's phone number in the Contacts app"


def _row_of(task, device, name: str) -> int:
    """Seed ``task``, open Contacts as the child will, and find the id of ``name``'s row."""
    seed(task, device)
    launch_app(device, "com.google.android.contacts")
    row = next(e for e in device.observe().elements if e.text == name)
    device.press("home")
    return row.id


def _delegate(tools, budget=4, goal=LOOKUP):
    return {"name": "delegate", "arguments": {"goal": goal, "tools": tools, "budget": budget}}


def _run(script, device, device_ref, store, **kw):
    return run_goal(
        TASK.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
        planner=ScriptedPlanner(script), store=store, task=TASK, **kw,
    )


def test_parent_delegates_the_lookup_then_saves_the_contact(device, device_ref, store):
    row = _row_of(TASK, device, "Grace Hopper")
    child_steps = []
    script = [
        _delegate(["open_app", "tap", "read_screen"]),
        {"name": "open_app", "arguments": {"app": "Contacts"}},  # the child's turns
        {"name": "tap", "arguments": {"element": row}},
        {"name": "finish", "arguments": {"answer": "+1 555 0199"}},
        {"name": "add_contact", "arguments": {"name": "Admiral Hopper", "phone": "+1 555 0199"}},  # the parent again
        {"name": "finish", "arguments": {"answer": "Saved Admiral Hopper with +1 555 0199"}},
    ]
    traj = _run(script, device, device_ref, store, on_child_step=child_steps.append)

    assert [s.tool_call.name for s in traj.steps] == ["delegate", "add_contact", "finish"]
    assert traj.status is TrajectoryStatus.finished and traj.verdict.success, traj.verdict
    fb = traj.steps[0].feedback
    assert fb.status is FeedbackStatus.ok
    assert fb.result["answer"] == "+1 555 0199" and fb.result["status"] == "finished" and fb.result["steps"] == 3
    assert "Grace Hopper" in fb.observation.screen  # the parent sees the screen the child left

    child = store.get(fb.result["trajectory"])
    assert store.children(traj.id) == [child.id] and child.parent == traj.id and traj.parent is None
    assert child.goal == LOOKUP and child.status is TrajectoryStatus.finished
    assert [s.tool_call.name for s in child.steps] == ["open_app", "tap", "finish"]
    assert [s.index for s in child_steps] == [0, 1, 2]  # the live view saw them as they happened
    assert [t.name for t in child.tools] == ["open_app", "read_screen", "tap", "finish"]  # its subset, no delegate
    # its own context: the child's first input holds its goal, not the parent's
    first = child.steps[0].messages
    assert first[-1].role is Role.user and first[-1].content.endswith(f"Goal: {LOOKUP}")
    assert "Admiral Hopper" not in "".join(m.content for m in first)
    assert "sub-agent" in first[0].content
    assert "delegate" in {t.name for t in traj.tools}


def test_a_child_out_of_budget_reports_truncated_and_the_parent_goes_on(device, device_ref, store):
    script = [
        _delegate(["read_screen"], budget=2),
        {"name": "read_screen", "arguments": {}},
        {"name": "read_screen", "arguments": {}},
        {"name": "finish", "arguments": {"answer": "could not find it"}},  # the parent's turn
    ]
    traj = _run(script, device, device_ref, store)
    fb = traj.steps[0].feedback
    assert fb.result["status"] == "truncated" and fb.result["steps"] == 2 and fb.result["answer"] is None
    assert traj.status is TrajectoryStatus.finished and not traj.verdict.success


def test_bad_tool_subsets_are_feedback_and_run_nothing(device, device_ref, store):
    script = [
        _delegate(["read_screen", "delegate"]),
        _delegate(["read_screen", "teleport"]),
        {"name": "finish", "arguments": {"answer": "gave up"}},
    ]
    traj = _run(script, device, device_ref, store)
    errors = [s.feedback.error for s in traj.steps[:2]]
    assert [e.code for e in errors] == [ErrorCode.invalid_arguments] * 2
    assert "cannot delegate further" in errors[0].hint and "'teleport'" in errors[1].hint
    assert store.children(traj.id) == []


def test_the_child_is_held_by_the_same_safety_gate(device, device_ref, store):
    gate = SafetyGate()  # deny sensitive actions: nobody to confirm, no policy
    script = [
        _delegate(["delete_contact"], goal="Delete Grace Hopper from my contacts"),
        {"name": "delete_contact", "arguments": {"name": "Grace Hopper"}},
        {"name": "finish", "arguments": {"answer": "not allowed"}},
        {"name": "finish", "arguments": {"answer": "done"}},
    ]
    traj = _run(script, device, device_ref, store, gate=gate)
    child = store.get(store.children(traj.id)[0])
    assert child.steps[0].feedback.status is FeedbackStatus.blocked
    assert child.steps[0].feedback.error.code is ErrorCode.unsafe_action
    assert ("delete_contact", False) in [(record.tool, record.allowed) for record in gate.log]
    assert traj.verdict.checks[1].passed  # Grace Hopper is still there


def test_the_parents_cost_counts_its_sub_agents_tokens_apart_from_its_own(device, device_ref, store):
    script = [
        _delegate(["read_screen"], budget=3, goal="Read what the home screen shows"),
        {"name": "read_screen", "arguments": {}},  # the child's turns
        {"name": "finish", "arguments": {"answer": "the home screen"}},
        {"name": "finish", "arguments": {"answer": "it shows the home screen"}},  # the parent again
    ]
    traj = _run(script, device, device_ref, store)
    child = store.get(store.children(traj.id)[0])
    assert child.usage.prompt_tokens > 0 and traj.usage.prompt_tokens > 0

    tokens = store.usage(traj.id)
    assert tokens.own == traj.usage  # the parent's own turns, as its row recorded them
    assert tokens.subagents == child.usage and tokens.subagent_episodes == 1
    assert tokens.total == traj.usage + child.usage

    row = next(r for r in store.query() if r.id == traj.id)
    assert (row.prompt_tokens, row.subagent_prompt_tokens, row.total_prompt_tokens) == (
        traj.usage.prompt_tokens, child.usage.prompt_tokens, traj.usage.prompt_tokens + child.usage.prompt_tokens)
    assert row.total_completion_tokens == traj.usage.completion_tokens + child.usage.completion_tokens

    table = {"scripted": {"input": 1.0, "output": 2.0}}
    cost = cost_report([traj, child], table)  # the sub-agent is part of the task, not a task of its own
    assert cost.tasks == 1
    assert (cost.input_tokens, cost.subagent_input_tokens) == (tokens.total.prompt_tokens, child.usage.prompt_tokens)
    assert cost.output_tokens_per_1k_tasks == 1000 * tokens.total.completion_tokens
    assert cost.dollars == pytest.approx((tokens.total.prompt_tokens + 2 * tokens.total.completion_tokens) / 1e6)


def test_the_token_limit_covers_the_sub_agents_too(device, device_ref, store):
    # The child may spend only what the parent has left, and the parent counts what the child spent:
    # delegating never multiplies the episode's budget.
    looks = [{"name": "read_screen", "arguments": {}}] * 12
    script = [_delegate(["read_screen"], budget=12, goal="Read what the home screen shows"), *looks]
    unlimited = _run(script + [{"name": "finish", "arguments": {"answer": "x"}}], device, device_ref, store)
    turn = max(s.usage.prompt_tokens + s.usage.completion_tokens for s in store.get(store.children(unlimited.id)[0]).steps)
    limit = 4 * turn
    traj = _run(script, device, device_ref, store, max_tokens=limit)
    assert traj.status is TrajectoryStatus.truncated
    spent = store.usage(traj.id)
    assert spent.subagent_episodes == 1 and spent.subagents.prompt_tokens > 0
    total = spent.total.prompt_tokens + spent.total.completion_tokens
    assert total <= limit + turn, (total, limit, turn)  # at most the turn that crossed the limit
