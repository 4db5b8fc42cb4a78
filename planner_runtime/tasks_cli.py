"""``planner-agent tasks list|audit|check`` and ``skills list|show|check``: what the agent is
tested on and the procedures it is given, from the shell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli_common import console, err, fail
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError

tasks_app = typer.Typer(help="Task specs and suites.", no_args_is_help=True)
skills_app = typer.Typer(help="Skills: how to use the tools (skills/<name>/SKILL.md).", no_args_is_help=True)


@tasks_app.command("list")
def tasks_list(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    as_json: bool = typer.Option(False, "--json"),
    split: Optional[str] = typer.Option(None, "--split", help="Only the train or the test split (split by template)."),
) -> None:
    """List the tasks of a suite."""
    from planner_runtime.tasks.spec import builtin_suite, load_suite

    try:
        tasks = load_suite(suite) if suite else builtin_suite()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([t.model_dump(mode="json") | {"split": t.split_name, "template": t.template}
                          for t in tasks.tasks if split is None or t.split_name == split], indent=2))
        return
    for t in tasks.tasks:
        if split is None or t.split_name == split:
            console.print(f"[bold]{t.id}[/bold]  [dim]{t.category.value}/{t.domain}/{t.difficulty}/{t.split_name}[/dim]  {t.rendered_goal()}")


@tasks_app.command("audit")
def tasks_audit(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Audit on this attached phone."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
) -> None:
    """Run a do-nothing planner on every task; flag tasks that pass without acting (exit 1 if any)."""
    from functools import partial

    from planner_runtime.runner import open_device
    from planner_runtime.tasks.audit import audit
    from planner_runtime.tasks.spec import builtin_suite, load_suite
    from planner_runtime.trajectories import TrajectoryStore

    settings = Settings.from_env()
    host, port = parse_host_port(adb or settings.adb)
    try:
        tasks = load_suite(suite) if suite else builtin_suite()
        with TrajectoryStore(store or settings.store_path) as db:
            results = audit(tasks.tasks, partial(open_device, serial, host, port, say=lambda m: None), db)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    flagged = [r for r in results if r.passes_without_acting]
    for r in results:
        mark = "[red]PASSES WITHOUT ACTING[/red]" if r.passes_without_acting else "[green]ok[/green]"
        console.print(f"{r.task_id}  {mark}  score {r.verdict.score:.2f}")
    console.print(f"{len(results)} tasks audited, {len(flagged)} flagged")
    if flagged:
        raise typer.Exit(1)


@tasks_app.command("check")
def tasks_check(path: Path = typer.Argument(..., help="A suite YAML file to validate.")) -> None:
    """Validate a suite file; errors name the line and field."""
    from planner_runtime.tasks.spec import load_suite

    try:
        tasks = load_suite(path)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"{path}: {len(tasks.tasks)} tasks OK")


def _load_skills(directory: Optional[Path]):  # noqa: ANN202 - list[Skill]
    from planner_runtime.harness.skills import load_skills

    try:
        return load_skills(directory)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


_SKILLS_DIR = typer.Option(None, "--dir", help="Skills folder (default: $PLANNER_AGENT_SKILLS_DIR or the built-in one).")


@skills_app.command("list")
def skills_list(directory: Optional[Path] = _SKILLS_DIR, as_json: bool = typer.Option(False, "--json")) -> None:
    """List the skills with their apps, tools and composite."""
    skills = _load_skills(directory)
    if as_json:
        print(json.dumps([s.model_dump(mode="json", exclude={"body"}) for s in skills], indent=2))
        return
    for s in skills:
        extra = f"  [dim]one call: {s.tool_name}[/dim]" if s.composite else ""
        console.print(f"[bold]{s.name}[/bold]  [dim]{', '.join(s.apps) or '-'} | {', '.join(s.tools)}[/dim]  {s.description}{extra}")


@skills_app.command("show")
def skills_show(name: str = typer.Argument(...), directory: Optional[Path] = _SKILLS_DIR) -> None:
    """Show one skill as the planner reads it."""
    skill = next((s for s in _load_skills(directory) if s.name == name), None)
    if skill is None:
        raise fail(f"no skill {name!r}; see `planner-agent skills list`")
    console.print(skill.to_prompt(full=True), markup=False)


@skills_app.command("check")
def skills_check(directory: Optional[Path] = _SKILLS_DIR) -> None:
    """Check every skill: referenced tools exist, composite placeholders are declared parameters."""
    from planner_runtime.harness.skills import check_skill
    from planner_runtime.harness.toolbox import episode_tool_names

    names = episode_tool_names()
    skills = _load_skills(directory)
    bad = 0
    for skill in skills:
        for problem in check_skill(skill, names):
            bad += 1
            err.print(f"{skill.path}: {problem}")
    if bad:
        raise typer.Exit(1)
    console.print(f"{len(skills)} skills OK")
