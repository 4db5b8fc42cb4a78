"""``planner-agent tasks list|audit|check`` and ``skills list|show|check``: what the agent is
tested on and the procedures it is given, from the shell.

Exit statuses follow :class:`~planner_runtime.cli.common.ExitCode`: a bad option, a missing or
invalid suite or skill file is ``usage`` (one ``file:line: field: message`` line on stderr, no
traceback); an audit that flags tasks is ``failed``; a device fault is ``infra``. With
``--json`` stdout holds only the JSON document; everything for people goes to stderr.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from planner_runtime.cli.common import ExitCode, console, err, fail
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError

tasks_app = typer.Typer(help="Task specs and suites.", no_args_is_help=True)
skills_app = typer.Typer(help="Skills: how to use the tools (skills/<name>/SKILL.md).", no_args_is_help=True)


class Split(str, Enum):
    train = "train"
    test = "test"


def _emit(document: Any) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))


def _load(suite: Optional[Path]):  # noqa: ANN202 - a Suite
    from planner_runtime.tasks.spec import builtin_suite, load_suite

    try:
        return load_suite(suite) if suite else builtin_suite()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


@tasks_app.command("list")
def tasks_list(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    as_json: bool = typer.Option(False, "--json", help="Print the tasks as JSON (only JSON on stdout)."),
    split: Optional[Split] = typer.Option(None, "--split", help="Only the train or the test split (split by template)."),
) -> None:
    """List the tasks of a suite."""
    tasks = [t for t in _load(suite).tasks if split is None or t.split_name == split.value]
    if as_json:
        _emit([t.model_dump(mode="json") | {"split": t.split_name, "template": t.template} for t in tasks])
        return
    for t in tasks:
        console.print(f"[bold]{t.id}[/bold]  [dim]{t.category.value}/{t.domain}/{t.difficulty}/{t.split_name}[/dim]  "
                      f"{escape(t.rendered_goal())}")


@tasks_app.command("audit")
def tasks_audit(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s",
                                         help="Audit on this attached phone instead of the built-in virtual phone "
                                              "(needs --allow-reset: every task's setup runs on it)."),
    allow_reset: bool = typer.Option(False, "--allow-reset",
                                     help="Let the tasks' setups delete and overwrite data on the --serial phone (a warning names what)."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port the --serial phone is on."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON (only JSON on stdout)."),
) -> None:
    """Flag tasks a planner passes without doing the work: run a do-nothing planner on every
    task, and judge its end state again with an answer naming every entity the setup seeded.

    Runs on fresh built-in virtual phones unless --serial names a phone, which needs --allow-reset
    (or the serial in PLANNER_AGENT_DISPOSABLE_SERIALS): the setups delete and overwrite its data.
    Exit 0 when no task is flagged, 1 when some task is flagged or could not be run,
    2 when --serial is given without --allow-reset, 3 when the device failed."""
    from contextlib import ExitStack
    from functools import partial

    from device_farm.errors import DeviceError
    from planner_runtime.runs.run import open_device
    from planner_runtime.runs.audit import audit, builtin_phones, what_setup_resets
    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        settings = Settings.from_env()
        host, port = parse_host_port(adb or settings.adb)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    tasks = _load(suite)
    if serial is not None and serial not in settings.disposable_serials:
        resets = what_setup_resets(tasks.tasks)
        if not allow_reset:
            raise fail(f"the audit runs every task's setup on {serial}, which {resets}; pass --allow-reset "
                        "to run it there anyway, or leave out --serial to audit on the built-in virtual phone")
        err.print(f"[yellow]warning:[/yellow] running every task's setup on {escape(serial)}: it {escape(resets)}",
                  soft_wrap=True)
    say = err.print if as_json else console.print
    try:
        with ExitStack() as stack:
            db = stack.enter_context(TrajectoryStore(store or settings.store_path))
            phones = (partial(open_device, serial, host, port, say=lambda m: None) if serial is not None
                      else stack.enter_context(builtin_phones()))
            results = audit(tasks.tasks, phones, db)
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    flagged = [r for r in results if r.flagged]
    broken = [r for r in results if not r.ran and not r.flagged]
    infra = any(r.infra for r in results)
    for r in results:
        if r.passes_without_acting:
            mark = "[red]PASSES WITHOUT ACTING[/red]"
        elif r.passes_by_naming_everything:
            mark = "[red]PASSES BY NAMING EVERYTHING[/red] (add answer_excludes with the wrong candidates)"
        elif r.passes_by_number_spray:
            mark = "[red]PASSES BY NUMBER SPRAY[/red] (check the number with answer_number, or exclude the wrong ones)"
        elif not r.ran:
            mark = f"[yellow]COULD NOT RUN[/yellow] {escape(r.error or _first_evidence(r))}"
        else:
            mark = "[green]ok[/green]"
        score = f"  score {r.verdict.score:.2f}" if r.verdict is not None else ""
        say(f"{r.task_id}  {mark}{score}", soft_wrap=True)
    unrun = len(tasks.tasks) - len(results)
    say(f"{len(results)} tasks audited, {len(flagged)} flagged" + (f", {len(broken)} could not run" if broken else "")
        + (f", {unrun} not reached" if unrun else ""))
    if as_json:
        _emit({"audited": len(results), "flagged": len(flagged), "could_not_run": len(broken), "not_reached": unrun,
               "results": [r.to_json() for r in results]})
    if infra:
        raise typer.Exit(ExitCode.infra)
    if flagged or broken:
        raise typer.Exit(ExitCode.failed)


def _first_evidence(result) -> str:  # noqa: ANN001 - AuditResult
    checks = result.verdict.checks if result.verdict is not None else ()
    return next((c.evidence for c in checks if not c.passed), "")


@tasks_app.command("check")
def tasks_check(
    path: Path = typer.Argument(..., help="A suite YAML file to validate."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (only JSON on stdout)."),
) -> None:
    """Validate a suite file; errors name the line and field (exit 2 when it is invalid).
    Checks that read device state the setup never sets are warnings (a real phone keeps what
    earlier runs left): the suite is still valid."""
    from planner_runtime.tasks.spec import load_suite, suite_problems
    from planner_runtime.tasks.state_coverage import suite_unset_reads

    problems = suite_problems(path)
    if problems:  # every problem, one line each, so one run of the check finds them all
        if as_json:
            shown = [{"path": p.path, "line": p.line, "field": p.field, "message": p.message} for p in problems]
            _emit({"path": str(path), "ok": False, "error": shown[0], "errors": shown})
        for problem in problems[:-1]:
            fail(str(problem))  # prints the line; the last one's exit ends the command
        raise fail(str(problems[-1]))
    tasks = load_suite(path)
    unset = suite_unset_reads(tasks.tasks)
    for u in unset:
        err.print(f"[yellow]warning:[/yellow] {escape(str(path))}: {escape(u.message())}", soft_wrap=True)
    if as_json:
        _emit({"path": str(path), "ok": True, "tasks": len(tasks.tasks)} | ({"warnings": [u.to_json() for u in unset]} if unset else {}))
        return
    console.print(f"{escape(str(path))}: {len(tasks.tasks)} tasks OK" + (f", {len(unset)} warnings" if unset else ""), soft_wrap=True)


def _load_skills(directory: Optional[Path]):  # noqa: ANN202 - list[Skill]
    from planner_runtime.harness.skills import load_skills

    if directory is not None and not directory.is_dir():
        raise fail(f"{directory}: no such skills folder")
    try:
        return load_skills(directory)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


_SKILLS_DIR = typer.Option(None, "--dir", help="Skills folder (default: $PLANNER_AGENT_SKILLS_DIR or the built-in one).")


@skills_app.command("list")
def skills_list(directory: Optional[Path] = _SKILLS_DIR,
                as_json: bool = typer.Option(False, "--json", help="Print the skills as JSON (only JSON on stdout).")) -> None:
    """List the skills with their apps, tools and composite."""
    skills = _load_skills(directory)
    if as_json:
        _emit([s.model_dump(mode="json", exclude={"body"}) for s in skills])
        return
    for s in skills:
        extra = f"  [dim]one call: {s.tool_name}[/dim]" if s.composite else ""
        console.print(f"[bold]{s.name}[/bold]  [dim]{escape(', '.join(s.apps) or '-')} | {escape(', '.join(s.tools))}[/dim]  "
                      f"{escape(s.description)}{extra}")


@skills_app.command("show")
def skills_show(name: str = typer.Argument(...), directory: Optional[Path] = _SKILLS_DIR) -> None:
    """Show one skill as the planner reads it."""
    skill = next((s for s in _load_skills(directory) if s.name == name), None)
    if skill is None:
        raise fail(f"no skill {name!r}; see `planner-agent skills list`")
    console.print(skill.to_prompt(full=True), markup=False)


@skills_app.command("check")
def skills_check(directory: Optional[Path] = _SKILLS_DIR,
                 as_json: bool = typer.Option(False, "--json", help="Print the problems as JSON (only JSON on stdout).")) -> None:
    """Check every skill: referenced tools exist, composite placeholders are declared parameters
    (exit 2 when a skill has a problem)."""
    from planner_runtime.harness.skills import check_skill
    from planner_runtime.harness.toolbox import episode_tool_names

    names = episode_tool_names()
    skills = _load_skills(directory)
    problems = [(skill.path, problem) for skill in skills for problem in check_skill(skill, names)]
    for path, problem in problems:
        err.print(f"{escape(path)}: {escape(problem)}", soft_wrap=True)
    if as_json:
        _emit({"skills": len(skills), "ok": not problems, "problems": [{"path": p, "problem": m} for p, m in problems]})
    if problems:
        raise typer.Exit(ExitCode.usage)
    if not as_json:
        console.print(f"{len(skills)} skills OK")


GENERATED_KINDS = ("composition", "recombination", "tight")


@tasks_app.command("generate")
def tasks_generate(
    collection: str = typer.Option(..., "--collection", help="The collection whose failures to aim at (see `trajectories list`)."),
    out: Path = typer.Option(..., "--out", help="The suite file to write the accepted tasks to (must not exist)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file) holding the collection."),
    suite: Optional[Path] = typer.Option(None, "--suite", help="The suite the collection ran (default: built-in)."),
    limit: int = typer.Option(10, "--max", min=1, max=200, help="At most this many candidates of each kind."),
    kinds: Optional[list[str]] = typer.Option(None, "--kind", help="Only these kinds (repeat): composition, recombination, tight (default: all three; phrasings come with --llm)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="An OpenAI-compatible endpoint (http://host:port) proposing new goal phrasings."),
    model: str = typer.Option("planner", "--model", help="The model name sent to --llm."),
    devices: int = typer.Option(2, "-n", "--devices", min=1, max=16, help="Virtual phones playing the candidates' demos."),
    as_json: bool = typer.Option(False, "--json", help="Print the gaps and decisions as JSON (only JSON on stdout)."),
) -> None:
    """Write new executable tasks aimed at a collection's failures: compositions of a weak domain's
    template with another app's into one cross-app task; recombinations, new points of a template's
    parameter space (one parameter's value from another of its instances); tight variants, whose
    step limit is the demo's length; and (with --llm) new goal phrasings.
    Each is kept only when its spec checks, the audit flags nothing and its demo passes its own
    verifier. Exit 0 when at least one was accepted, 1 when none was, 2 on a usage mistake."""
    import tempfile

    from planner_runtime.coevolve.analysis import failure_gaps
    from planner_runtime.runs.generate import compositions, gate, phrasings, write_suite
    from planner_runtime.runs.variations import recombinations, tight_variants
    from planner_runtime.trajectories.store import TrajectoryStore

    if out.exists():
        raise fail(f"{out} exists; choose a new file (nothing is overwritten)")
    if not out.parent.is_dir():
        raise fail(f"{out.parent} is not a folder")
    if llm is not None and not llm.startswith(("http://", "https://")):
        raise fail(f"--llm {llm!r}: give an http(s):// address of an OpenAI-compatible server")
    unknown = sorted(set(kinds or ()) - set(GENERATED_KINDS))
    if unknown:
        raise fail(f"--kind {unknown[0]!r}: choose from {', '.join(GENERATED_KINDS)}")
    chosen = set(kinds or GENERATED_KINDS)
    try:
        settings = Settings.from_env()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    base = _load(suite)
    db_path = store or settings.store_path
    if not db_path.exists():
        raise fail(f"no trajectory store at {db_path}")
    say = err.print if as_json else console.print
    try:
        with TrajectoryStore(db_path) as db:
            gaps = failure_gaps(db, collection, base)
    except PlannerRuntimeError as exc:  # not a store, a newer one, no such collection
        raise fail(str(exc)) from exc
    if gaps.failures == 0:
        raise fail(f"collection {collection!r} has no failures to aim at ({gaps.episodes} episodes, all passed)")
    for kind in ("category", "domain", "tool", "error"):
        top = gaps.top(kind)[:5]
        if top:
            say(f"[bold]{kind}[/bold]: " + ", ".join(f"{escape(g.name)} {g.failures}/{g.episodes}" for g in top), soft_wrap=True)
    domains, categories = [g.name for g in gaps.top("domain")], [g.name for g in gaps.top("category")]
    candidates = compositions(base, gaps, limit) if "composition" in chosen else []
    if "recombination" in chosen:
        candidates += recombinations(base, domains, categories, limit)
    if "tight" in chosen:
        candidates += tight_variants(base, domains, categories, limit)
    refused: list[str] = []
    if llm is not None:
        worded, refused = phrasings(base, gaps, llm, limit, model=model)
        candidates += worded
    say(f"{len(candidates)} candidates; checking each (audit, demo) ...")
    with tempfile.TemporaryDirectory(prefix="planner-agent-generate-") as scratch, \
            TrajectoryStore(Path(scratch) / "gates.sqlite") as gates_db:
        verdicts = gate(candidates, [t.id for t in base.tasks], store=gates_db, workers=devices, state_dir=Path(scratch))
    if verdicts.accepted:
        write_suite(verdicts.accepted, out, f"planner-agent tasks generate --collection {collection}\n"
                                            f"aimed at: " + ", ".join(g.name for g in gaps.top("domain")[:5]))
    if as_json:
        _emit({"gaps": gaps.to_json(), "accepted": [t.id for t in verdicts.accepted],
               "rejected": [{"task": i, "why": w} for i, w in verdicts.rejected], "refused": refused,
               "out": str(out) if verdicts.accepted else None})
    else:
        for task_id, why in verdicts.rejected:
            console.print(f"[red]rejected[/red] {escape(task_id)}: {escape(why)}", soft_wrap=True)
        for line in refused:
            console.print(f"[yellow]refused[/yellow] {escape(line)}", soft_wrap=True)
        for task in verdicts.accepted:
            console.print(f"[green]accepted[/green] {escape(task.id)}  {escape(task.rendered_goal())}", soft_wrap=True)
        console.print(f"{len(verdicts.accepted)} accepted, {len(verdicts.rejected)} rejected"
                      + (f", written to {escape(str(out))}" if verdicts.accepted else ", nothing written"))
    if not verdicts.accepted:
        raise typer.Exit(ExitCode.failed)
