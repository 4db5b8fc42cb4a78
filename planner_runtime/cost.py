"""What episodes cost: input and output tokens per step and per task, dollars per 1,000 tasks.

Token counts come from the trajectories as the planner reported them (output tokens include any
``<think>`` reasoning: the local planner counts every generated token, OpenAI-compatible servers
count reasoning in ``completion_tokens``). Prices come from the settings' table, dollars per
1M tokens, looked up by the trajectory's planner release (``openai:<model>@host``) or the model
inside it; local and scripted planners cost nothing unless the table says otherwise.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from planner_runtime.contract import Record, Trajectory
from planner_runtime.errors import ConfigError

FREE_PREFIXES = ("local:", "scripted")


class Price(Record):
    input_per_m: float = 0.0  # dollars per 1M input (prompt) tokens
    output_per_m: float = 0.0  # dollars per 1M output tokens, thinking included

    def dollars(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_m + output_tokens * self.output_per_m) / 1e6


def release_model(release: str) -> str:
    """``openai:gpt-4o-mini@api.openai.com`` → ``gpt-4o-mini``; ``local:smollm2@ab12`` → ``smollm2``."""
    body = release.partition(":")[2] if ":" in release else release
    return body.rpartition("@")[0] if "@" in body else body


def price_for(release: str, table: Mapping[str, Mapping[str, float]]) -> Price | None:
    """The price of a planner release, or ``None`` when the table does not know a paid model."""
    for key in (release, release_model(release)):
        entry = table.get(key)
        if entry is not None:
            try:
                return Price(input_per_m=float(entry.get("input", 0.0)), output_per_m=float(entry.get("output", 0.0)))
            except (TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(f"price of {key!r} must be {{'input': $/1M, 'output': $/1M}}, not {entry!r}") from exc
    if release.startswith(FREE_PREFIXES) or not release:
        return Price()
    return None


class StepCost(Record):
    index: int
    input_tokens: int
    output_tokens: int
    dollars: float | None


class TaskCost(Record):
    trajectory_id: str
    task_id: str | None
    planner_release: str
    steps: tuple[StepCost, ...]
    input_tokens: int
    output_tokens: int
    dollars: float | None  # None when the planner's price is unknown


class CostReport(Record):
    tasks: int
    input_tokens: int
    output_tokens: int
    input_tokens_per_task: float
    output_tokens_per_task: float
    output_tokens_per_1k_tasks: float
    dollars: float | None
    dollars_per_1k_tasks: float | None
    unpriced: tuple[str, ...] = ()  # planner releases the table lacks


def trajectory_cost(traj: Trajectory, table: Mapping[str, Mapping[str, float]]) -> TaskCost:
    price = price_for(traj.planner_release or traj.planner, table)
    steps = tuple(
        StepCost(
            index=s.index,
            input_tokens=s.usage.prompt_tokens,
            output_tokens=s.usage.completion_tokens,
            dollars=price.dollars(s.usage.prompt_tokens, s.usage.completion_tokens) if price else None,
        )
        for s in traj.steps
    )
    # The trajectory's own total also covers turns that were not kept as steps.
    input_tokens = max(traj.usage.prompt_tokens, sum(s.input_tokens for s in steps))
    output_tokens = max(traj.usage.completion_tokens, sum(s.output_tokens for s in steps))
    return TaskCost(
        trajectory_id=traj.id,
        task_id=traj.task_id,
        planner_release=traj.planner_release or traj.planner,
        steps=steps,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        dollars=price.dollars(input_tokens, output_tokens) if price else None,
    )


def cost_report(trajectories: Iterable[Trajectory], table: Mapping[str, Mapping[str, float]]) -> CostReport:
    """Totals and per-task means over ``trajectories``; dollars only when every planner is priced."""
    costs = [trajectory_cost(t, table) for t in trajectories]
    n = len(costs)
    inputs = sum(c.input_tokens for c in costs)
    outputs = sum(c.output_tokens for c in costs)
    unpriced = tuple(sorted({c.planner_release for c in costs if c.dollars is None}))
    dollars = None if unpriced else sum(c.dollars or 0.0 for c in costs)
    return CostReport(
        tasks=n,
        input_tokens=inputs,
        output_tokens=outputs,
        input_tokens_per_task=inputs / n if n else 0.0,
        output_tokens_per_task=outputs / n if n else 0.0,
        output_tokens_per_1k_tasks=1000 * outputs / n if n else 0.0,
        dollars=dollars,
        dollars_per_1k_tasks=(1000 * dollars / n if n else 0.0) if dollars is not None else None,
        unpriced=unpriced,
    )
