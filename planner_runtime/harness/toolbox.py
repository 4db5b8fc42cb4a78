"""The tools of an episode, chosen per device and per goal, plus the composites of its skills.

Every prompt carrying every tool would cost a small planner thousands of tokens a step and
offer tools for apps the phone does not have. So an episode gets the general tools (screen,
keys, finish, user, memory), the app tools of installed apps that the goal bears on (ranked
lexically over each app's name, aliases and tool descriptions), and whatever its chosen skills
use; a goal naming no app keeps them all. An episode with a simulated world (a task's) may also
be offered simulated services' tools (:mod:`planner_runtime.harness.tools.simulated`), ranked
with the apps by their family's names and topics; a goal that bears on none gets none of them,
so prompts do not grow with the size of the catalogue.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from device_farm import Device
from planner_runtime.harness.apps import APPS, find_app
from planner_runtime.harness.relevance import names_any, scores, words
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.skills import Skill, load_skills, select, skills_prompt
from planner_runtime.harness.tools import Tool, ToolContext, ToolSet
from planner_runtime.harness.tools.composite import CompositeTool
from planner_runtime.harness.tools.registry import default_tools
from planner_runtime.harness.tools.core import AskUser
from planner_runtime.harness.tools.memory import Recall, Remember
from planner_runtime.harness.tools.screenshot import Screenshot
from planner_runtime.harness.tools.simulated.tool import families, find_family, simulated_tools

MAX_APPS = 4  # app domains offered to one goal
# An app is offered when it scores at least this share of the goal's best app (or the goal names it).
# Measured over the built-in suite's demos (which apps each task needs): the share 0.6, with named
# apps kept and quoted text left out, offers every needed app for 643 of 644 tasks with 297 apps not
# needed in all; a third of the best (no names kept, topics weighed as names) did for 596, with 935.
KEEP_SHARE = 0.6
NAME_WEIGHT, TOPIC_WEIGHT = 3.0, 2.0
# The sub-agent tool's name. The tool itself (harness.subagents) runs episodes and chooses their
# tools with this module, so only its name is known here.
DELEGATE_TOOL = "delegate"


# General tools made per episode: they need a user, a profile or the screenshot store to run.
PER_EPISODE: tuple[type[Tool], ...] = (AskUser, Screenshot, Remember, Recall)


def default_toolset() -> ToolSet:
    """Every default tool, of every app in the catalogue (imports every app's tool module)."""
    return default_tools()


def episode_tool_names() -> set[str]:
    """Every tool an episode can offer: the default list, the simulated services' tools, plus the
    per-episode ones (user, screenshot, memory, sub-agents), which need a user, a profile or a
    planner to exist."""
    names = set(default_toolset().names()) | {t.name for t in simulated_tools()}
    return names | {t.name for t in PER_EPISODE} | {DELEGATE_TOOL}


def services(ctx: ToolContext) -> list[str]:
    """The simulated families an episode on ``ctx`` can use (all, with a world; else none)."""
    return list(families()) if ctx.world is not None else []


def with_simulated(tools: ToolSet, ctx: ToolContext) -> ToolSet:
    """``tools`` plus every simulated service's tool (before ``finish``) when ``ctx`` has a world."""
    if ctx.world is None:
        return tools
    return with_skills(tools, [], [t for t in simulated_tools() if t.name not in tools])


def with_skills(base: ToolSet, chosen: list[Skill], extra: Sequence[Tool] = ()) -> ToolSet:
    """``base`` with the composites of ``chosen`` and the ``extra`` tools added before ``finish``."""
    tools = [t for t in base if t.name != "finish"]
    tools += [CompositeTool(skill, base) for skill in chosen if skill.composite] + list(extra)
    return ToolSet(tools + ([base["finish"]] if "finish" in base else []))


def installed_apps(installed: set[str]) -> list[str]:
    """The catalogue names of the apps among ``installed`` packages."""
    return [a.name for a in APPS if any(p in installed for p in a.packages)]


def usable(tools: ToolSet, apps: Sequence[str]) -> ToolSet:
    """The tools that work on a phone with ``apps``: general ones and those of installed apps."""
    present = set(apps)
    return ToolSet(t for t in tools if t.app is None or not t.needs_app or t.app in present)


def device_tools(ctx: ToolContext) -> ToolSet:
    """The default tools that work on ``ctx``'s phone: general ones and those of its installed apps."""
    apps = installed_apps(ctx.installed())
    return with_simulated(usable(default_tools(apps), apps), ctx)


def _app_entry(app: str, tools: list[Tool]) -> tuple[list[str], str]:
    """What an app (or a simulated family) is called (its names, title and aliases) and its topics.
    The app must be in the catalogue: a misspelt one would silently lose its aliases and topics."""
    entry = find_family(app) if tools[0].simulated else find_app(app)
    if entry is None:
        raise ValueError(f"tool {tools[0].name!r} names app {app!r}, which is not in the apps catalogue")
    title = entry.title if tools[0].simulated else ""
    return [n for n in (app.replace("_", " "), title, *entry.aliases) if n], entry.topics


def _app_doc(names: list[str], topics: str, tools: list[Tool]) -> list[tuple[str, float]]:
    """What an app is known by, weighted: its names and tool names most, the words of the goals it
    serves (topics) less, its tools' descriptions least. Topics weigh less than names because a
    goal's content ("running late", "minutes") meets many apps' topics while its verb ("Text")
    names the one app that does it."""
    return [
        (" ".join([*names, *(t.name.replace("_", " ") for t in tools)]), NAME_WEIGHT),
        (topics, TOPIC_WEIGHT),
        (" ".join(t.description for t in tools), 1.0),
    ]


_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|“[^”]*”")


def _unquoted(goal: str) -> str:
    """``goal`` without its quoted text: "Text Bo saying 'Running 10 minutes late'" is about
    texting, not running or trains; "a note titled 'Groceries'" is a note, not a grocery order."""
    return _QUOTED.sub(" ", goal)


def relevant_apps(tools: ToolSet, goal: str, *, max_apps: int = MAX_APPS) -> list[str]:
    """The apps of ``tools`` that ``goal`` bears on, best first, at most ``max_apps``: those scoring
    at least :data:`KEEP_SHARE` of the best match, and those the goal names (an app's name or
    alias as words of the goal: the "calendar" of "find the concert and put it in my calendar",
    which scores below the concert's app). A named app takes a place before an unnamed one.
    Empty when the goal bears on none of them."""
    by_app: dict[str, list[Tool]] = {}
    for tool in tools:
        if tool.app is not None:
            by_app.setdefault(tool.app, []).append(tool)
    if not by_app:
        return []
    entries = {app: _app_entry(app, app_tools) for app, app_tools in by_app.items()}
    docs = [_app_doc(*entries[app], by_app[app]) for app in by_app]
    said = _unquoted(goal)
    ranked = sorted(zip(scores(docs, said), by_app), key=lambda pair: -pair[0])
    if ranked[0][0] <= 0:  # only quoted words match: better them than nothing
        said = goal
        ranked = sorted(zip(scores(docs, said), by_app), key=lambda pair: -pair[0])
    if ranked[0][0] <= 0:
        return []
    said_words = words(said)
    named = [app for score, app in ranked if score > 0 and names_any(said_words, entries[app][0])]
    close = [app for score, app in ranked if score >= ranked[0][0] * KEEP_SHARE and app not in named]
    kept = set((named + close)[:max_apps])
    return [app for _, app in ranked if app in kept]


def for_goal(tools: ToolSet, goal: str, *, keep: Iterable[str] = (), max_apps: int = MAX_APPS) -> ToolSet:
    """``tools`` narrowed to what ``goal`` needs: every general tool (GUI, finish, user, memory),
    the app tools of the apps the goal bears on, and the tools named in ``keep`` (those the
    chosen skills use). A goal that bears on no app keeps every app tool: nothing says which
    to drop (but no simulated service's: those come only when the goal bears on them).

    General tools keep their places; the app tools fill the places app tools had, the best
    matching app's first (a small planner tends to call the first app tool it reads), each app's
    best matching tool first (:func:`tool_fit`; ties keep the app's own order). The same goal on
    the same phone always gets the same prompt."""
    apps = relevant_apps(tools, goal, max_apps=max_apps)
    if not apps:
        return ToolSet(t for t in tools if not t.simulated or t.name in set(keep))
    wanted = set(keep)
    chosen = [t for t in tools if t.app is None or t.app in apps or t.name in wanted]
    rank = {app: i for i, app in enumerate(apps)}
    of_apps = [t for t in chosen if t.app is not None]
    fit = tool_fit(of_apps, goal)
    app_tools = iter(sorted(of_apps, key=lambda t: (rank.get(t.app, len(apps)), -fit[t.name])))  # stable
    return ToolSet(t if t.app is None else next(app_tools) for t in chosen)


def tool_fit(tools: Sequence[Tool], goal: str) -> dict[str, float]:
    """How well each tool's name (weighed :data:`NAME_WEIGHT`) and description match ``goal``'s
    unquoted words (:func:`~planner_runtime.harness.relevance.scores` over these tools): what
    orders an app's tools, the likeliest first. "Call back the number I just missed" puts
    ``recent_calls`` before ``call``, and "Start walking directions to Tartine Bakery" ``navigate_to``
    before ``search_place``."""
    docs = [[(t.name.replace("_", " "), NAME_WEIGHT), (t.description, 1.0)] for t in tools]
    return dict(zip((t.name for t in tools), scores(docs, _unquoted(goal))))


def choose_tools(
    goal: str, ctx: ToolContext, skills: Sequence[Skill] | None = None, extra: Sequence[Tool] = (), *, narrow: bool = True,
) -> tuple[ToolSet, list[Skill]]:
    """The tools for ``goal`` on ``ctx``'s phone and the skills chosen for it.

    The tools are chosen per device (app tools only for installed apps) and, with ``narrow``,
    per goal (:func:`for_goal`); skills are chosen by relevance among ``skills`` (``None``: the
    installed ones) whose tools are usable and whose apps are installed, and their composites
    and tools are offered, with ``extra`` before ``finish``."""
    apps = installed_apps(ctx.installed())
    pool = with_simulated(usable(default_tools(apps), apps), ctx)
    chosen = select(load_skills() if skills is None else list(skills), goal, tools=pool.names(), apps=apps + services(ctx))
    if narrow:
        pool = for_goal(pool, goal, keep={t for s in chosen for t in s.referenced_tools()})
    return with_skills(pool, chosen, extra), chosen


def toolset_for(
    goal: str,
    device: Device,
    skills: list[Skill] | None = None,
    gate: SafetyGate | None = None,
    extra: Sequence[Tool] = (),
    *,
    narrow: bool = True,
) -> tuple[ToolSet, ToolContext, str]:
    """Tools, a tool context and the skills prompt for ``goal`` on ``device`` (see
    :func:`choose_tools`). Without a ``gate``, sensitive actions are denied."""
    ctx = ToolContext(device=device, gate=gate or SafetyGate())
    tools, chosen = choose_tools(goal, ctx, skills, extra, narrow=narrow)
    return tools, ctx, skills_prompt(chosen)
