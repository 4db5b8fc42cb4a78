"""A revision folder from the harness in use, and the checks of one against the tool catalogue
(apart from :mod:`planner_runtime.harness.revision`, which every episode reads, because these
need the whole catalogue)."""

from __future__ import annotations

from pathlib import Path

from planner_runtime.errors import ConfigError
from planner_runtime.harness.revision import TOOL_DESCRIPTIONS_FILE, current, export_revision, load_revision, unknown_tools


def export_current(dest: Path) -> Path:
    """Write the instructions in use now (the revision's over the built-in ones) to ``dest``."""
    from planner_runtime.harness.catalogue import catalogue
    from planner_runtime.harness.episode import SYSTEM_PROMPT
    from planner_runtime.harness.skills import default_skills_dir

    revision = current()
    described = {e.name: e.description for e in catalogue(composites=False)} | revision.tool_descriptions
    return export_revision(dest, system_prompt=revision.system_prompt or SYSTEM_PROMPT, descriptions=described,
                           skills_dir=default_skills_dir())


def check_revision(path: Path) -> list[str]:
    """Problems of the revision at ``path`` as lines (empty: sound): its files, tool names the
    catalogue lacks, and skills that do not load or name tools that do not exist."""
    from planner_runtime.harness.catalogue import catalogue
    from planner_runtime.harness.skills import check_skill, load_skills

    try:
        revision = load_revision(path)
    except ConfigError as exc:
        return [str(exc)]
    entries = catalogue(composites=False)
    problems = [f"{path / TOOL_DESCRIPTIONS_FILE}: {name}: no tool of that name"
                for name in unknown_tools(revision, {e.name for e in entries})]
    if revision.skills_dir is not None:
        try:
            skills = load_skills(revision.skills_dir)
        except ConfigError as exc:
            return [*problems, str(exc)]
        names = {e.name for e in entries} | {s.tool_name for s in skills if s.composite}
        problems += [f"{s.path}: {line}" for s in skills for line in check_skill(s, names)]
    return problems
