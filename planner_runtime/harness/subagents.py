"""Sub-agents: ``delegate(goal, tools, budget)`` runs a child episode and answers with its result.

The child works on the same device with the same planner and the same safety gate, but in its
own context: fresh messages holding only its goal (and the skills chosen for that goal), a
subset of the parent's tools, or when it names none, the tools its own goal needs (``finish``
always included, ``delegate`` never — sub-agents go one level deep), and a step budget. Its trajectory is stored on its own with a ``parent`` link, so
it can be reviewed, replayed and trained on like any other, and ``planner-agent show`` nests its
steps under the delegate step. The child's answer, status and step count come back as the
delegate call's feedback, with the screen it left behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import Field

from device_farm.errors import DeviceOffline
from planner_runtime.contract import DeviceRef, ErrorCode, Source, Step, TrajectoryStatus
from planner_runtime.harness.episode import SYSTEM_PROMPT, Episode, EpisodeLimits
from planner_runtime.harness.skills import Skill, load_skills, select, skills_prompt
from planner_runtime.harness.toolbox import device_tools, for_goal, installed_apps, with_skills
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult, ToolSet
from planner_runtime.planners import Planner, Sampling
from planner_runtime.trajectories.sink import EpisodeSink

MAX_BUDGET = 20
SUBAGENT_PROMPT = (
    "You are a sub-agent: another assistant gave you the goal below as one part of a larger task. "
    "Do only this goal, then call finish with exactly what the caller needs (for instance the number or "
    "text you found), or say why it cannot be done."
)


@dataclass(frozen=True)
class Lineage:
    """What a delegated episode shares with the episode that delegates it."""

    planner: Planner
    store: EpisodeSink
    device: DeviceRef
    parent_id: str
    source: Source = Source.sandbox
    limits: EpisodeLimits = EpisodeLimits()  # the parent's; the child's steps are its budget
    sampling: Sampling | None = None
    skills: tuple[Skill, ...] | None = None  # None: the installed skills
    on_step: Callable[[Step], None] | None = None  # the child's steps, as they happen


class DelegateArgs(ToolArgs):
    goal: str = Field(min_length=1, max_length=500, description="The sub-task, complete in itself: the sub-agent sees nothing else")
    tools: list[str] = Field(default_factory=list, description="Names of your tools it may use (finish is always added); empty: the ones its goal needs")
    budget: int = Field(default=6, ge=1, le=MAX_BUDGET, description="The most steps it may take")


class Delegate(Tool):
    name = "delegate"
    description = (
        "Hand a self-contained sub-task (such as looking something up in one app) to a sub-agent with "
        "its own fresh context; you get back its answer, status and step count."
    )
    Args = DelegateArgs

    def __init__(self, pool: ToolSet, lineage: Lineage) -> None:
        self.pool, self.lineage = pool, lineage

    def _subset(self, ctx: ToolContext, names: list[str], goal: str) -> ToolSet:
        """The named tools of the parent's; none named: the tools the sub-goal needs, drawn from
        the parent's and the installed apps' (the parent was offered only its own goal's)."""
        if self.name in names:
            raise ToolFailure(ErrorCode.invalid_arguments, "a sub-agent cannot delegate further; leave delegate out of tools")
        offered = [t for t in self.pool if t.name != self.name]
        unknown = [n for n in names if n not in self.pool]  # delegate itself was refused above
        if unknown:
            raise ToolFailure(ErrorCode.invalid_arguments, f"no tool named {', '.join(map(repr, unknown))}; yours: {', '.join(t.name for t in offered)}")
        if names:
            tools = [t for t in offered if t.name in names]  # keep the parent's order
        else:
            installed = device_tools(ctx)
            tools = list(for_goal(ToolSet(offered + [t for t in installed if t.name not in self.pool]), goal))
        finish = [self.pool["finish"]] if "finish" in self.pool else []
        return ToolSet([t for t in tools if t.name != "finish"] + finish)

    def _system_prompt(self, ctx: ToolContext, goal: str, tools: ToolSet) -> str:
        apps = installed_apps(ctx.installed())
        pool = load_skills() if self.lineage.skills is None else list(self.lineage.skills)
        chosen = select(pool, goal, tools=tools.names(), apps=apps)
        return "\n\n".join(part for part in (SYSTEM_PROMPT, SUBAGENT_PROMPT, skills_prompt(chosen)) if part)

    def _tokens_left(self) -> int | None:
        """What is left of the episode's token limit for a sub-agent: the limit less what the
        parent's stored turns and its earlier sub-agents have spent (so delegating never
        multiplies the budget); ``None`` without a limit."""
        lin = self.lineage
        if lin.limits.max_tokens is None:
            return None
        spent = lin.store.usage(lin.parent_id).total
        left = lin.limits.max_tokens - spent.prompt_tokens - spent.completion_tokens
        if left <= 0:
            raise ToolFailure(ErrorCode.action_failed, f"the episode's token limit ({lin.limits.max_tokens}) is spent; finish with what you have")
        return left

    def run(self, ctx: ToolContext, args: DelegateArgs) -> ToolResult:
        tools = self._subset(ctx, args.tools, args.goal)
        lin = self.lineage
        child_ctx = ToolContext(device=ctx.device, gate=ctx.gate, screen_chars=ctx.screen_chars)
        limits = EpisodeLimits(
            max_steps=args.budget,
            max_seconds=lin.limits.max_seconds,
            max_repeats=lin.limits.max_repeats,
            max_tokens=self._tokens_left(),
            retry_wait=lin.limits.retry_wait,
        )
        child = Episode(
            goal=args.goal,
            planner=lin.planner,
            tools=tools,
            ctx=child_ctx,
            store=lin.store,
            device=lin.device,
            source=lin.source,
            limits=limits,
            sampling=lin.sampling,
            system_prompt=self._system_prompt(ctx, args.goal, tools),
            on_step=lin.on_step,
            parent=lin.parent_id,
        ).run()
        if child.status is TrajectoryStatus.infra_error:
            raise DeviceOffline(f"an infrastructure fault (device or planner endpoint) ended the sub-agent's episode (trajectory {child.id})")
        ctx.observe()  # the parent sees the screen the child left
        usage = child.usage
        return ToolResult(
            result={
                "status": child.status.value,
                "answer": child.answer,
                "steps": len(child.steps),
                "tokens": usage.prompt_tokens + usage.completion_tokens,
                "trajectory": child.id,
            },
            observe=True,
        )


def with_delegate(tools: ToolSet, lineage: Lineage) -> ToolSet:
    """``tools`` plus ``delegate`` (before ``finish``), whose sub-agents draw on ``tools``."""
    return with_skills(tools, [], [Delegate(tools, lineage)])
