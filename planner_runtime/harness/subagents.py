"""Sub-agents: ``delegate(goal, tools, budget)`` runs a child episode and answers with its result.

The child works on the same device with the same planner and the same safety gate, but in its
own context: fresh messages holding only its goal (and the skills chosen for that goal), a
subset of the parent's tools, or when it names none, the tools its own goal needs (``finish``
always included, ``delegate`` never — sub-agents go one level deep), and a step budget, as
:func:`~planner_runtime.harness.assembly.plan_subagent` plans it. Its trajectory is stored on
its own with a ``parent`` link, so
it can be reviewed, replayed and trained on like any other, and ``planner-agent show`` nests its
steps under the delegate step. The child's answer, status and step count come back as the
delegate call's feedback, with the screen it left behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import Field

from device_farm.errors import DeviceOffline
from planner_runtime.contract import ErrorCode, Step, TrajectoryStatus
from planner_runtime.harness.assembly import plan_subagent, subagent_limits
from planner_runtime.harness.episode import EpisodeLimits
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.skills import Skill
from planner_runtime.harness.toolbox import DELEGATE_TOOL, with_skills
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult, ToolSet
from planner_runtime.planners import Planner, Sampling
from planner_runtime.trajectories.sink import EpisodeSink

MAX_BUDGET = 20


@dataclass(frozen=True)
class Lineage:
    """What a delegated episode shares with the episode that delegates it."""

    planner: Planner
    store: EpisodeSink
    identity: EpisodeIdentity  # the parent's; the child's is derived from it (same phone and source)
    parent_id: str
    limits: EpisodeLimits = EpisodeLimits()  # the parent's; the child's steps are its budget
    sampling: Sampling | None = None
    skills: tuple[Skill, ...] | None = None  # None: the installed skills
    on_step: Callable[[Step], None] | None = None  # the child's steps, as they happen


class DelegateArgs(ToolArgs):
    goal: str = Field(min_length=1, max_length=500, description="The sub-task, complete in itself: the sub-agent sees nothing else")
    tools: list[str] = Field(default_factory=list, description="Names of your tools it may use (finish is always added); empty: the ones its goal needs")
    budget: int = Field(default=6, ge=1, le=MAX_BUDGET, description="The most steps it may take")


class Delegate(Tool):
    name = DELEGATE_TOOL
    description = (
        "Hand a self-contained sub-task (such as looking something up in one app) to a sub-agent with "
        "its own fresh context; you get back its answer, status and step count."
    )
    Args = DelegateArgs

    def __init__(self, pool: ToolSet, lineage: Lineage) -> None:
        self.pool, self.lineage = pool, lineage

    def _check(self, names: list[str]) -> None:
        """Refuse tool names the sub-agent cannot have: ``delegate`` itself, or none of the parent's."""
        if self.name in names:
            raise ToolFailure(ErrorCode.invalid_arguments, "a sub-agent cannot delegate further; leave delegate out of tools")
        unknown = [n for n in names if n not in self.pool]  # delegate itself was refused above
        if unknown:
            offered = ", ".join(t.name for t in self.pool if t.name != self.name)
            raise ToolFailure(ErrorCode.invalid_arguments, f"no tool named {', '.join(map(repr, unknown))}; yours: {offered}")

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
        self._check(args.tools)
        lin = self.lineage
        limits = subagent_limits(lin.limits, budget=args.budget, tokens_left=self._tokens_left())
        plan = plan_subagent(args.goal, ctx, parent_tools=self.pool, named=args.tools, limits=limits, skills=lin.skills)
        child = plan.episode(
            planner=lin.planner,
            ctx=ToolContext(device=ctx.device, gate=ctx.gate, screen_chars=ctx.screen_chars, world=ctx.world),
            store=lin.store,
            identity=lin.identity.child(lin.parent_id),
            sampling=lin.sampling,
            on_step=lin.on_step,
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
