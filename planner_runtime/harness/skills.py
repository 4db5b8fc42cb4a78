"""Skills: how to use the tools, kept outside the model as ``skills/<name>/SKILL.md`` files.

A skill has YAML front matter (name, description, apps, tools, parameters, when to use and,
for a routine procedure, a ``composite``: a checked sequence of tool calls the planner runs as
one call) and a Markdown body of procedures and pitfalls. For an episode, the skills whose
tools are offered and whose apps are installed are ranked by relevance to the goal and put in
the system prompt within a character budget; the composites of the chosen skills become tools.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner_runtime.config import Settings
from planner_runtime.errors import ConfigError
from planner_runtime.harness.apps import APPS, App, find_app
from planner_runtime.harness.relevance import scores, terms

ENV_DIR = Settings.variable("skills_dir")
_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)\}")
# Quoted words are what to write or find ("Text Ada 'Running late'"), not what to do; an
# apostrophe inside a word ("Ada's", "I'm") opens no quote.
_WORDS = re.compile(r"[a-z0-9.\-]+")
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


class ElementRef(BaseModel):
    """Finds an element on the current screen for a composite step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str | None = None  # text or description contains this
    near_text: str | None = None  # the candidate on the same row as the element whose text starts with this
    role: str | None = None  # widget class short name, e.g. Switch
    checked: bool | None = None


class CompositeStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)  # values may be "{param}" or an ElementRef for `element`
    optional: bool = False  # an element that cannot be found skips the step instead of failing
    expect: ElementRef | None = None  # a check: this element must be on the screen now

    @model_validator(mode="after")
    def _one_kind(self) -> CompositeStep:
        if (self.tool is None) == (self.expect is None):
            raise ValueError("a step is either a tool call (tool) or a check (expect)")
        return self


class Parameter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str = "string"
    description: str = ""


class Skill(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    description: str
    when_to_use: str = ""
    apps: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    parameters: dict[str, Parameter] = Field(default_factory=dict)
    composite: tuple[CompositeStep, ...] = ()
    body: str = ""
    path: str = ""

    @property
    def tool_name(self) -> str:
        """The name the composite is offered under."""
        return "skill_" + self.name.replace("-", "_")

    def referenced_tools(self) -> set[str]:
        return set(self.tools) | {s.tool for s in self.composite if s.tool}

    def to_prompt(self, full: bool) -> str:
        head = f"## {self.name}\n{self.description}"
        if self.when_to_use:
            head += f"\nWhen: {self.when_to_use}"
        if self.composite:
            head += f"\nOne call does it: {self.tool_name}({', '.join(self.parameters)})"
        return f"{head}\n{self.body.strip()}" if full and self.body.strip() else head


def default_skills_dir() -> Path:
    """``$PLANNER_AGENT_SKILLS_DIR``, else the skills of the harness revision in use
    (:mod:`planner_runtime.harness.revision`) when it has some, else the built-in skills:
    ``planner_runtime/skills/``, which in a checkout is a link to the top-level ``skills/`` folder
    (resolved, so paths name that folder) and in an installed wheel holds the copies the build shipped."""
    from planner_runtime.harness.revision import current

    chosen = Settings.read("skills_dir")
    if chosen is not None:
        return chosen
    revised = current().skills_dir
    if revised is not None:
        return revised
    return (Path(__file__).resolve().parents[1] / "skills").resolve()


def parse_skill(path: Path) -> Skill:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc
    if not text.startswith("---"):
        raise ConfigError(f"{path}: a SKILL.md starts with YAML front matter between '---' lines")
    try:
        _, front, body = text.split("---", 2)
        meta = yaml.safe_load(front) or {}
        if not isinstance(meta, dict):
            raise ConfigError(f"{path}: the front matter must be a mapping (key: value), got a {type(meta).__name__}")
        return Skill(**meta, body=body.strip(), path=str(path))
    except (ValueError, yaml.YAMLError, TypeError) as exc:
        detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(str(p) for p in detail["loc"]) + ": " + detail["msg"] if detail else str(exc).splitlines()[0]
        raise ConfigError(f"{path}: {where}") from exc


@functools.lru_cache(maxsize=1024)
def _parsed(path: Path, mtime_ns: int) -> Skill:
    return parse_skill(path)


def load_skills(directory: Path | None = None) -> list[Skill]:
    """Every skill under ``directory``; each file is parsed once and again only when it changes."""
    root = directory or default_skills_dir()
    if not root.is_dir():
        return []
    skills = [_parsed(p, p.stat().st_mtime_ns) for p in sorted(root.glob("*/SKILL.md"))]
    names = [s.name for s in skills]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"{root}: duplicate skill names {sorted(dupes)}")
    return skills


def check_skill(skill: Skill, tool_names: Iterable[str]) -> list[str]:
    """Problems with ``skill`` against the available tools; empty when it is sound."""
    known = set(tool_names)
    problems = [f"unknown tool {t!r}" for t in sorted(skill.referenced_tools() - known)]
    for i, step in enumerate(skill.composite):
        for name in _PLACEHOLDER.findall(repr(step.model_dump())):
            if name not in skill.parameters:
                problems.append(f"composite step {i + 1} uses {{{name}}} but parameters do not declare it")
    if skill.composite and not skill.composite[0].tool:
        problems.append("a composite must start with a tool call, not a check")
    return problems


# "my phone" is the device, not the Phone app: "Mute my phone" is no call.
_THE_DEVICE = re.compile(r"\b(?:my|the|this|your) phone\b(?! app)")


def _catalogue(services: Sequence[App] = ()) -> list[App]:
    return [*APPS, *services]


def services_among(apps: Iterable[str]) -> list[App]:
    """The simulated services (families, as catalogue records) named in ``apps``: an episode
    with a world has them beside its installed apps."""
    from planner_runtime.harness.tools.simulated.tool import families

    named = {a.lower() for a in apps}
    return [App(f.family, (), (f.title.lower(), *f.aliases), f.topics, domain=f.domain) for f in families().values() if f.family in named]


def _app_name(name: str, services: Sequence[App]) -> str | None:
    entry = find_app(name)
    if entry is not None:
        return entry.name
    return next((s.name for s in services if s.name == name.lower()), None)


def app_needs(goal: str, services: Sequence[App] = ()) -> dict[str, float]:
    """How strongly ``goal`` names each catalogue app: by its name and aliases (what a user calls
    it) more than by its topics. A many-word alias counts only as the whole phrase ("file
    manager", not "manager"; "booking.com", not "booking"), and tool names stay out: ``read_text_file`` must not make "Text
    Ada" a Files goal."""
    goal = _THE_DEVICE.sub("device", goal.lower())
    said = " ".join(_WORDS.findall(goal))
    docs = []
    records = _catalogue(services)
    for app in records:
        aliases = [a for a in app.aliases if a.isalnum() or f" {a} " in f" {said} "]
        docs.append([(" ".join([app.name, *aliases]), 3.0), (app.topics, 1.0)])
    return {a.name: score for a, score in zip(records, scores(docs, goal))}


def _needed_apps(needs: dict[str, float]) -> dict[str, float]:
    """The apps the goal needs: those matching at least a third of the best app's match."""
    best = max(needs.values(), default=0.0)
    return {app: score for app, score in needs.items() if best > 0 and score >= best / 3}


def _skill_app(skill: Skill, needed: dict[str, float], services: Sequence[App] = ()) -> str | None:
    """The needed app ``skill`` works in, the most needed one when it serves several."""
    apps = [name for a in skill.apps if (name := _app_name(a, services)) is not None and name in needed]
    return max(apps, key=lambda name: needed[name], default=None)


def _skill_text(skill: Skill) -> str:
    return f"{skill.name.replace('-', ' ')} {skill.description} {skill.when_to_use} {' '.join(skill.apps)}"


def rank(skills: Sequence[Skill], goal: str, services: Sequence[App] = ()) -> list[tuple[bool, float, Skill]]:
    """Skills by what ``goal`` needs: first those of an app the goal names (at least a third of
    the best app's match), then by stemmed word overlap with the skill's text, weighted by rarity
    across the skills. The app comes first because a shared verb ("set", "put") says less about
    a skill than the app it works in: "Set an alarm" is a Clock goal whatever Settings says."""
    goal = _QUOTED.sub(" ", goal)
    needed = _needed_apps(app_needs(goal, services))
    docs = [_skill_text(s) for s in skills]
    rows = [(_skill_app(skill, needed, services) is not None, text_score, skill) for text_score, skill in zip(scores(docs, goal), skills)]
    return sorted(rows, key=lambda row: (not row[0], -row[1]))


def _by_app(ranked: Sequence[tuple[bool, float, Skill]], needed: dict[str, float], services: Sequence[App] = ()) -> list[tuple[int, float, Skill]]:
    """The needed skills in rounds: the first holds each needed app's best skills (all those
    tied at its best score: "Text Ada ..." may be a read or a send), the next each app's next
    best, and so on, down to half the app's best score; an app the goal needs more comes first
    in a round (the budget is spent in this order). So a goal needing two apps ("Text Ada the time of my dentist appointment") gets
    a skill of each before a second of either."""
    per_app: dict[str, list[tuple[float, Skill]]] = {}
    for is_needed, score, skill in ranked:  # best score first
        app = _skill_app(skill, needed, services) if is_needed else None
        if app is not None:
            per_app.setdefault(app, []).append((score, skill))
    rounds: list[list[tuple[float, str, Skill]]] = []
    for app, rows in per_app.items():
        best = rows[0][0]
        kept = [row for row in rows if row[0] >= best / 2]
        ties = sum(score == best for score, _ in kept)
        for k, group in enumerate([kept[:ties], *([row] for row in kept[ties:])]):
            if k == len(rounds):
                rounds.append([])
            rounds[k].extend((score, app, skill) for score, skill in group)
    return [(k, score, skill) for k, rnd in enumerate(rounds) for score, app, skill in sorted(rnd, key=lambda row: -needed[row[1]])]


def select(
    skills: Sequence[Skill], goal: str, *, tools: Iterable[str], apps: Iterable[str], budget_chars: int = 3600, limit: int = 4
) -> list[Skill]:
    """The relevant skills usable here: their tools offered, one of their apps installed.

    A skill of an app the goal needs is shown even when its text shares no word with the goal
    ("When is my dentist appointment?" needs Calendar), and every app the goal needs gets its
    best skill before any gets a second; a skill of another app only when the goal names no
    app, and then only with a word no other skill has and a score of at least half the best (a
    shared verb is noise: "Turn the volume down" is no Wi-Fi or alarm goal)."""
    tool_set, app_set = set(tools), {a.lower() for a in apps}
    usable = [s for s in skills if set(s.tools) <= tool_set and (not s.apps or any(a.lower() in app_set for a in s.apps))]
    services = services_among(app_set)
    ranked = rank(usable, goal, services)
    needed = _needed_apps(app_needs(_QUOTED.sub(" ", goal), services))
    if any(is_needed for is_needed, _, _ in ranked):
        candidates = _by_app(ranked, needed, services)
    else:
        # a word several skills share ("turn", "set") says nothing: one of them must have a word of its own
        bags = {id(skill): terms(_skill_text(skill)) & terms(_QUOTED.sub(" ", goal)) for _, _, skill in ranked}
        own = [(score, skill) for _, score, skill in ranked
               if any(all(w not in bags[id(o)] for _, _, o in ranked if o is not skill) for w in bags[id(skill)])]
        floor = max((score for score, _ in own), default=0.0) / 2
        candidates = [(0, score, skill) for score, skill in own if score > 0 and score >= floor]
    chosen, used = [], 0
    for row in candidates:
        if len(chosen) == limit:
            break
        size = len(row[2].to_prompt(full=True))
        if used + size > budget_chars:
            continue
        chosen.append(row)
        used += size
    # shown best first: by round, then by how well the skill's text matches the goal
    return [skill for _, _, skill in sorted(chosen, key=lambda row: (row[0], -row[1]))]


def skills_prompt(chosen: Sequence[Skill]) -> str:
    if not chosen:
        return ""
    return "# Skills\n\n" + "\n\n".join(s.to_prompt(full=True) for s in chosen)
