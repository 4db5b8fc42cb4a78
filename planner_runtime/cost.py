"""What episodes cost: input and output tokens per step and per task, dollars per 1,000 tasks.

Token counts come from the trajectories as the planner reported them (output tokens include any
``<think>`` reasoning: the local planner counts every generated token, OpenAI-compatible servers
count reasoning in ``completion_tokens``). Prices come from the settings' table, dollars per
1M tokens, looked up by the trajectory's planner release (``openai:<model>@host``) or the model
inside it; local and scripted planners cost nothing unless the table says otherwise.

A trajectory's own usage is what its planner turns cost; the sub-agents it delegated (and theirs)
are episodes of their own, stored with a ``parent`` link. A task's cost is both, kept apart
(:class:`TokenUsage`): totals always include the sub-agents, and every figure names their share.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from planner_runtime.contract import Record, Trajectory, Usage
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


class TokenUsage(Record):
    """A trajectory's tokens: its own planner turns' and its sub-agents' (every level down)."""

    own: Usage = Usage()
    subagents: Usage = Usage()
    subagent_episodes: int = 0

    @property
    def total(self) -> Usage:
        return self.own + self.subagents

    def split(self) -> str:
        """``N prompt + M output tokens`` of the total, then the split when sub-agents ran."""
        t = self.total
        text = f"{t.prompt_tokens} prompt + {t.completion_tokens} output tokens"
        if not self.subagent_episodes:
            return text
        own, sub, n = self.own, self.subagents, self.subagent_episodes
        return (f"{text} (own {own.prompt_tokens} + {own.completion_tokens}, sub-agents "
                f"{sub.prompt_tokens} + {sub.completion_tokens} in {n} episode{'' if n == 1 else 's'})")


def own_usage(traj: Trajectory) -> Usage:
    """What ``traj``'s own planner turns cost: its recorded total, which also covers turns that
    were not kept as steps, or where none was written (an episode cut off before its end) the sum
    over its steps. The store counts a trajectory's tokens the same way."""
    if traj.usage != Usage():
        return traj.usage
    return sum((s.usage for s in traj.steps), Usage())


class StepCost(Record):
    index: int
    input_tokens: int
    output_tokens: int
    dollars: float | None


class TaskCost(Record):
    """One task's cost: its own turns (``steps``) and its sub-agents' episodes (``subagents``,
    every level, each priced by its own planner); the totals include both."""

    trajectory_id: str
    task_id: str | None
    planner_release: str
    steps: tuple[StepCost, ...]
    input_tokens: int  # own + sub-agents'
    output_tokens: int
    dollars: float | None  # None when a planner's price is unknown
    own_input_tokens: int = 0
    own_output_tokens: int = 0
    subagent_input_tokens: int = 0
    subagent_output_tokens: int = 0
    subagents: tuple[TaskCost, ...] = ()


class CostReport(Record):
    tasks: int
    input_tokens: int  # own + sub-agents'
    output_tokens: int
    input_tokens_per_task: float
    output_tokens_per_task: float
    output_tokens_per_1k_tasks: float
    dollars: float | None
    dollars_per_1k_tasks: float | None
    unpriced: tuple[str, ...] = ()  # planner releases the table lacks
    subagent_input_tokens: int = 0  # the sub-agents' share of the totals above
    subagent_output_tokens: int = 0
    subagent_output_tokens_per_1k_tasks: float = 0.0


def trajectory_cost(traj: Trajectory, table: Mapping[str, Mapping[str, float]],
                    subagents: Sequence[Trajectory] = ()) -> TaskCost:
    """``traj``'s cost with that of ``subagents``, the episodes it delegated (every level down)."""
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
    own = own_usage(traj)
    children = tuple(trajectory_cost(child, table) for child in subagents)
    sub_in = sum(c.input_tokens for c in children)
    sub_out = sum(c.output_tokens for c in children)
    priced = price is not None and all(c.dollars is not None for c in children)
    return TaskCost(
        trajectory_id=traj.id,
        task_id=traj.task_id,
        planner_release=traj.planner_release or traj.planner,
        steps=steps,
        input_tokens=own.prompt_tokens + sub_in,
        output_tokens=own.completion_tokens + sub_out,
        dollars=price.dollars(own.prompt_tokens, own.completion_tokens) + sum(c.dollars or 0.0 for c in children) if priced else None,
        own_input_tokens=own.prompt_tokens,
        own_output_tokens=own.completion_tokens,
        subagent_input_tokens=sub_in,
        subagent_output_tokens=sub_out,
        subagents=children,
    )


def _roots(trajectories: Sequence[Trajectory]) -> dict[str, list[Trajectory]]:
    """Each trajectory whose delegating episode is not among ``trajectories`` → the sub-agent
    episodes among them that descend from it (a sub-agent is part of its task, not a task)."""
    by_id = {t.id: t for t in trajectories}

    def root(t: Trajectory) -> str:
        seen = {t.id}
        while t.parent in by_id and t.parent not in seen:
            t = by_id[t.parent]
            seen.add(t.id)
        return t.id

    groups: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        top = root(t)
        groups.setdefault(top, [])
        if top != t.id:
            groups[top].append(t)
    return groups


def cost_report(trajectories: Iterable[Trajectory], table: Mapping[str, Mapping[str, float]]) -> CostReport:
    """Totals and per-task means over ``trajectories``; dollars only when every planner is priced.

    Pass the sub-agents' episodes too (``TrajectoryStore.descendants``): each counts in the task
    that delegated it, so the figures per task and per 1,000 tasks include what sub-agents cost."""
    trajs = list(trajectories)
    by_id = {t.id: t for t in trajs}
    costs = [trajectory_cost(by_id[top], table, family) for top, family in _roots(trajs).items()]
    n = len(costs)
    inputs = sum(c.input_tokens for c in costs)
    outputs = sum(c.output_tokens for c in costs)
    sub_outputs = sum(c.subagent_output_tokens for c in costs)
    episodes = costs + [s for c in costs for s in c.subagents]
    unpriced = tuple(sorted({c.planner_release for c in episodes if price_for(c.planner_release, table) is None}))
    dollars = None if any(c.dollars is None for c in costs) else sum(c.dollars or 0.0 for c in costs)
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
        subagent_input_tokens=sum(c.subagent_input_tokens for c in costs),
        subagent_output_tokens=sub_outputs,
        subagent_output_tokens_per_1k_tasks=1000 * sub_outputs / n if n else 0.0,
    )
