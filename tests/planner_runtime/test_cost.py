"""Cost accounting: tokens per step and task, dollars per 1,000 tasks from the settings' price table."""

from __future__ import annotations

import pytest

from planner_runtime.config import Settings
from planner_runtime.contract import DeviceRef, Feedback, Source, Step, Trajectory, Usage
from planner_runtime.cost import cost_report, price_for, trajectory_cost
from planner_runtime.errors import ConfigError


def traj(release: str, *usages: tuple[int, int]) -> Trajectory:
    steps = tuple(
        Step(index=i, messages=(), raw_output="", tool_call=None, feedback=Feedback.ok(f"c{i}"), usage=Usage(prompt_tokens=p, completion_tokens=c))
        for i, (p, c) in enumerate(usages)
    )
    total = sum((s.usage for s in steps), Usage())
    return Trajectory(goal="g", source=Source.sandbox, device=DeviceRef(serial="s"), planner=release.partition(":")[0],
                      planner_release=release, steps=steps, usage=total)


def test_prices_come_from_the_settings_table_read_from_the_environment():
    settings = Settings.from_env({"PLANNER_AGENT_PRICES": '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}'})
    price = price_for("openai:gpt-4o-mini@api.openai.com", settings.prices)
    assert price is not None and price.dollars(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert price_for("local:SmolLM2-135M-Instruct@abc", {}).dollars(10**9, 10**9) == 0.0
    assert price_for("openai:unknown@host", {}) is None
    with pytest.raises(ConfigError):
        Settings.from_env({"PLANNER_AGENT_PRICES": "{not json"})


def test_per_step_and_per_task_tokens_and_dollars():
    table = {"m": {"input": 2.0, "output": 10.0}}
    cost = trajectory_cost(traj("openai:m@h", (1000, 40), (1500, 60)), table)
    assert [(s.input_tokens, s.output_tokens) for s in cost.steps] == [(1000, 40), (1500, 60)]
    assert cost.steps[0].dollars == pytest.approx((1000 * 2 + 40 * 10) / 1e6)
    assert (cost.input_tokens, cost.output_tokens) == (2500, 100)
    assert cost.dollars == pytest.approx((2500 * 2 + 100 * 10) / 1e6)


def test_dollars_per_thousand_tasks_and_unknown_prices_are_named():
    table = {"m": {"input": 2.0, "output": 10.0}}
    report = cost_report([traj("openai:m@h", (1000, 40)), traj("openai:m@h", (3000, 60))], table)
    assert report.tasks == 2 and report.output_tokens_per_task == 50 and report.output_tokens_per_1k_tasks == 50_000
    assert report.dollars_per_1k_tasks == pytest.approx(1000 * (4000 * 2 + 100 * 10) / 1e6 / 2)
    mixed = cost_report([traj("openai:m@h", (10, 1)), traj("openai:other@h", (10, 1))], table)
    assert mixed.dollars is None and mixed.unpriced == ("openai:other@h",)


def test_a_task_costs_its_sub_agents_too_each_priced_by_its_own_planner():
    table = {"m": {"input": 2.0, "output": 10.0}, "small": {"input": 1.0, "output": 1.0}}
    parent = traj("openai:m@h", (1000, 40))
    child = traj("openai:small@h", (500, 20)).model_copy(update={"parent": parent.id})
    cost = trajectory_cost(parent, table, [child])
    assert (cost.own_input_tokens, cost.subagent_input_tokens, cost.input_tokens) == (1000, 500, 1500)
    assert cost.dollars == pytest.approx((1000 * 2 + 40 * 10 + 500 + 20) / 1e6)
    report = cost_report([parent, child], table)  # the sub-agent is part of the task that delegated it
    assert report.tasks == 1 and report.output_tokens_per_1k_tasks == 60_000 and report.subagent_output_tokens == 20
    unknown = child.model_copy(update={"planner_release": "openai:other@h"})
    mixed = cost_report([parent, unknown], table)
    assert mixed.dollars is None and mixed.unpriced == ("openai:other@h",)
