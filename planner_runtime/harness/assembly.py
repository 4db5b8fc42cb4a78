"""The one place an episode is put together: (goal, device context, skills, memory, limits, role)
in, an :class:`EpisodePlan` (the tools offered, the system prompt, the limits) out.

``run`` and ``collect`` (:func:`plan_run`), ``replay --from-step`` (:func:`plan_replan`) and a
delegated sub-agent (:func:`plan_subagent`) all plan here, so the same goal on the same phone
is offered the same tools and reads the same prompt whichever entry starts it. The roles differ
only where they must:

- ``main`` (run, collect): the device's tools narrowed to the goal, the chosen skills'
  composites, ``ask_user``, ``screenshot``, the memory tools and the memory's context when a
  profile is open, and ``delegate`` when the caller gives a way to make one.
- ``replan``: the tools the recorded episode was offered that run on this phone — no user,
  memory or sub-agent tools, since replay checks the phone — over the whole device (the
  recorded list already holds the goal's choice).
- ``subagent``: the parent's tools the call names, or the ones its goal needs drawn from the
  parent's and the installed apps', never ``delegate`` (sub-agents go one level deep); the
  system prompt says it is a sub-agent; its steps are the budget its caller gave.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Collection, Sequence

from planner_runtime.harness.episode import SYSTEM_PROMPT, Episode, EpisodeLimits
from planner_runtime.harness.memory.episodes import episode_context
from planner_runtime.harness.memory.search import MemoryStore
from planner_runtime.harness.revision import current as current_revision
from planner_runtime.harness.skills import Skill, load_skills, select, skills_prompt
from planner_runtime.harness.toolbox import DELEGATE_TOOL, choose_tools, device_tools, for_goal, installed_apps, services, with_skills
from planner_runtime.harness.tools import Tool, ToolContext, ToolSet
from planner_runtime.harness.tools.memory import memory_tools
from planner_runtime.harness.tools.screenshot import Screenshot
from planner_runtime.harness.tools.core import AskUser
from planner_runtime.harness.tools.user import Answerer

SUBAGENT_PROMPT = (
    "You are a sub-agent: another assistant gave you the goal below as one part of a larger task. "
    "Do only this goal, then call finish with exactly what the caller needs (for instance the number or "
    "text you found), or say why it cannot be done."
)
DEFAULT_STEPS = EpisodeLimits().max_steps  # a free-form goal's step limit when none is given


class EpisodeRole(StrEnum):
    main = "main"  # a goal a person or a collection gave
    replan = "replan"  # a stored episode continued from a step by another planner
    subagent = "subagent"  # a sub-goal another episode delegated


@dataclass(frozen=True)
class EpisodePlan:
    """What an episode offers and is held to; the episode loop runs it as given."""

    role: EpisodeRole
    goal: str
    tools: ToolSet
    system_prompt: str
    limits: EpisodeLimits
    skills: tuple[Skill, ...] = ()  # the skills chosen for the goal (their text is in the prompt)

    def episode(self, **run: Any) -> Episode:
        """The episode that runs this plan; ``run`` says who runs it and where (planner, ctx,
        store, identity) and any loop options (sampling, on_step, trajectory_id, prefix, history)."""
        return Episode(goal=self.goal, tools=self.tools, system_prompt=self.system_prompt, limits=self.limits, **run)


def system_prompt(role: EpisodeRole, chosen: Sequence[Skill], known: str = "") -> str:
    """The harness's prompt (the revision's in use, else the built-in one), a sub-agent's brief for that role, the chosen skills, and what the
    memory knows that bears on the goal (``known``), in that order."""
    brief = SUBAGENT_PROMPT if role is EpisodeRole.subagent else ""
    base = current_revision().system_prompt or SYSTEM_PROMPT
    return "\n\n".join(part for part in (base, brief, skills_prompt(chosen), known) if part)


def run_limits(*, max_steps: int | None = None, task_steps: int | None = None, max_tokens: int | None = None) -> EpisodeLimits:
    """A run's limits: ``max_steps`` when given, else the task's own, else :data:`DEFAULT_STEPS`."""
    return EpisodeLimits(max_steps=max_steps or (task_steps if task_steps is not None else DEFAULT_STEPS), max_tokens=max_tokens)


def replan_limits(*, recorded_steps: int, from_step: int, task_steps: int | None = None) -> EpisodeLimits:
    """A re-planned episode may take as many steps as the recorded one or its task allow, and
    at least one after the steps it resumes from."""
    return EpisodeLimits(max_steps=max(recorded_steps, task_steps or 0, from_step + 1))


def subagent_limits(parent: EpisodeLimits, *, budget: int, tokens_left: int | None) -> EpisodeLimits:
    """A sub-agent's limits: its caller's ``budget`` of steps, what is left of the token limit,
    and the parent's time, repeat and retry limits (its time ends at the parent's deadline)."""
    return EpisodeLimits(max_steps=budget, max_seconds=parent.max_seconds, max_repeats=parent.max_repeats,
                         max_tokens=tokens_left, retry_wait=parent.retry_wait)


def plan_run(
    goal: str,
    ctx: ToolContext,
    *,
    limits: EpisodeLimits,
    trajectory_id: str,
    skills: Sequence[Skill] | None = None,
    memory: MemoryStore | None = None,
    user: Answerer | None = None,
    delegate: Callable[[ToolSet], Tool] | None = None,
) -> EpisodePlan:
    """The plan of a goal a person or a collection gave (role ``main``).

    ``memory`` (a profile, open) adds the memory tools, whose memories cite ``trajectory_id``,
    and its context for the goal to the prompt; ``user`` answers ``ask_user`` (``None``: no user
    is available, and the tool says so); ``delegate`` makes the sub-agent tool over the tools
    chosen here. ``skills``: ``None`` for the installed ones."""
    extra: list[Tool] = memory_tools(memory, trajectory_id) if memory is not None else []
    extra += [AskUser(user), Screenshot()]
    tools, chosen = choose_tools(goal, ctx, skills, extra)
    if delegate is not None:
        tools = with_skills(tools, [], [delegate(tools)])
    known = episode_context(memory, goal) if memory is not None else ""
    return EpisodePlan(EpisodeRole.main, goal, tools, system_prompt(EpisodeRole.main, chosen, known), limits, tuple(chosen))


def plan_replan(
    goal: str, ctx: ToolContext, *, limits: EpisodeLimits, recorded: Collection[str] = (), skills: Sequence[Skill] | None = None,
) -> EpisodePlan:
    """The plan of a stored episode continued by another planner (role ``replan``): the
    ``recorded`` tools (the names it was offered) that run on this phone; a trajectory stored
    without its tool list gets every tool usable here."""
    tools, chosen = choose_tools(goal, ctx, skills, [Screenshot()], narrow=False)
    if recorded:
        tools = ToolSet(t for t in tools if t.name in recorded)
    return EpisodePlan(EpisodeRole.replan, goal, tools, system_prompt(EpisodeRole.replan, chosen), limits, tuple(chosen))


def plan_subagent(
    goal: str,
    ctx: ToolContext,
    *,
    parent_tools: ToolSet,
    named: Sequence[str] = (),
    limits: EpisodeLimits,
    skills: Sequence[Skill] | None = None,
) -> EpisodePlan:
    """The plan of a sub-goal delegated by an episode offered ``parent_tools`` (role
    ``subagent``): the ``named`` ones in the parent's order, or with none named the tools the
    sub-goal needs, drawn from the parent's and the installed apps' (the parent was offered only
    its own goal's); ``finish`` always last. The names must be the parent's tools, ``delegate``
    not among them (the delegate tool checks its arguments before planning)."""
    offered = [t for t in parent_tools if t.name != DELEGATE_TOOL]
    if named:
        tools = [t for t in offered if t.name in named]
    else:
        installed = device_tools(ctx)
        tools = list(for_goal(ToolSet(offered + [t for t in installed if t.name not in parent_tools]), goal))
    finish = [parent_tools["finish"]] if "finish" in parent_tools else []
    chosen_tools = ToolSet([t for t in tools if t.name != "finish"] + finish)
    pool = load_skills() if skills is None else list(skills)
    chosen = select(pool, goal, tools=chosen_tools.names(), apps=installed_apps(ctx.installed()) + services(ctx))
    return EpisodePlan(EpisodeRole.subagent, goal, chosen_tools, system_prompt(EpisodeRole.subagent, chosen), limits, tuple(chosen))
