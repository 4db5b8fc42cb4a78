"""The whole tool catalogue as records: every tool an episode can be offered, with its functional
domain, the app or simulated service it works through, and where it comes from.

An episode sees only the tools its phone and goal call for (:mod:`planner_runtime.harness.toolbox`);
this is the other view, all of them at once, for ``planner-agent tools list`` and for the bench's
breadth (tools per domain). Sources:

- ``app``: a phone app's tool (contacts, messages, ...), over Android mechanisms;
- ``simulated``: a simulated service's tool, from a family file (:mod:`.tools.simulated`);
- ``general``: for any screen or episode (GUI, finish, the user, memory, screenshots, sub-agents);
- ``skill``: a skill's composite, one call that runs a routine procedure.

Names are unique across all of them: :func:`catalogue` raises when two sources declare one name,
since a planner could not tell them apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from planner_runtime.errors import ConfigError
from planner_runtime.harness.apps import find_app
from planner_runtime.harness.tools import Tool

GENERAL = "general"  # the domain of tools that belong to no app or service


@dataclass(frozen=True)
class ToolEntry:
    name: str
    domain: str  # one of family.DOMAINS, or "general"
    app: str | None  # the catalogue app or the simulated family; None for general tools
    source: str  # app | simulated | general | skill
    sensitive: str | None  # the safety gate's category, when it asks before running
    description: str

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "domain": self.domain, "app": self.app, "source": self.source,
                "sensitive": self.sensitive, "description": self.description}


def _entry(tool: Tool | type[Tool]) -> ToolEntry:
    from planner_runtime.harness.tools.simulated.tool import find_family

    if tool.simulated:
        family = find_family(tool.app or "")
        domain, source = (family.domain if family else GENERAL), "simulated"
    elif tool.app is not None:
        app = find_app(tool.app)
        domain, source = (app.domain if app else GENERAL), "app"
    else:
        domain, source = GENERAL, "general"
    return ToolEntry(tool.name, domain, tool.app, source, tool.sensitive.value if tool.sensitive else None,
                     " ".join(tool.description.split()))


def _episode_tools() -> list[type[Tool]]:
    """The general tools made per episode: the toolbox's, and the sub-agent tool."""
    from planner_runtime.harness.subagents import Delegate
    from planner_runtime.harness.toolbox import PER_EPISODE

    return [*PER_EPISODE, Delegate]


def _composites() -> list[ToolEntry]:
    from planner_runtime.harness.skills import load_skills

    entries = []
    for skill in load_skills():
        if not skill.composite:
            continue
        app = find_app(skill.apps[0]) if skill.apps else None
        domain = app.domain if app is not None else _family_domain(skill.apps)
        entries.append(ToolEntry(skill.tool_name, domain, skill.apps[0] if skill.apps else None, "skill", None,
                                 " ".join(skill.description.split())))
    return entries


def _family_domain(names: Iterable[str]) -> str:
    from planner_runtime.harness.tools.simulated.tool import find_family

    for name in names:
        family = find_family(name)
        if family is not None:
            return family.domain
    return GENERAL


def catalogue(*, composites: bool = True) -> list[ToolEntry]:
    """Every tool, phone apps' first, then simulated services', general ones, skills' composites."""
    from planner_runtime.harness.toolbox import default_toolset
    from planner_runtime.harness.tools.simulated.tool import simulated_tools

    tools: list[Tool] = [t for t in default_toolset() if t.app is not None] + simulated_tools()
    tools += [t for t in default_toolset() if t.app is None]
    entries = [_entry(t) for t in tools] + [_entry(cls) for cls in _episode_tools()]
    if composites:
        entries += _composites()
    twice = sorted(n for n, k in Counter(e.name for e in entries).items() if k > 1)
    if twice:
        raise ConfigError(f"tool names declared twice in the catalogue: {', '.join(twice)}")
    return entries


def per_domain(entries: Iterable[ToolEntry]) -> dict[str, int]:
    """How many tools each domain has, largest first (general tools included, as ``general``)."""
    return dict(Counter(e.domain for e in entries).most_common())
