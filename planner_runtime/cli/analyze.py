"""``planner-agent analyze COLLECTION``: where a collection's verified failures cluster, its success
rates per category and domain, and (with ``--out``) the proposals those clusters call for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from planner_runtime.cli.common import console, err, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

TOP = 12  # clusters shown in the table


def analyze(
    collection: str = typer.Argument(..., help="The collection to analyse (see `trajectories list`)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file) holding the collection."),
    out: Optional[Path] = typer.Option(None, "--out", help="A folder to write analysis.json and one JSON file per proposal to "
                                       "(nothing in it is overwritten)."),
    recipe: Optional[Path] = typer.Option(None, "--recipe", help="A data recipe (YAML) the recipe proposal re-weights "
                                          "(default: a new recipe selecting this collection)."),
    suite: Optional[Path] = typer.Option(None, "--suite", help="The suite the collection ran (default: the one it recorded)."),
    harness: Optional[Path] = typer.Option(None, "--harness", help="A harness revision folder (`harness export`): harness proposals "
                                           "are diffs against its files instead of the source tree's."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis and proposals as JSON (only JSON on stdout)."),
) -> None:
    """Cluster a collection's verified failures (first error code, first step off the task's
    demo, tool, app, category, domain; infra faults counted apart) and propose a recipe
    re-weighting and harness revisions as unified diffs, each citing its failures. Proposals are
    only written, never applied."""
    from planner_runtime.coevolve.analysis import analyze as run_analysis
    from planner_runtime.coevolve.proposals import propose, write_proposals
    from planner_runtime.tasks.spec import load_suite
    from planner_runtime.trajectories.store import TrajectoryStore

    if out is not None and (out / "analysis.json").exists():
        raise fail(f"{out / 'analysis.json'} exists; choose a new --out folder (nothing is overwritten)")
    if out is not None and out.exists() and not out.is_dir():
        raise fail(f"--out {out} is not a folder")
    if recipe is not None and not recipe.is_file():
        raise fail(f"--recipe {recipe}: no such file")
    if harness is not None and not (harness / "system_prompt.txt").is_file():
        raise fail(f"--harness {harness}: not a harness revision folder (make one with `planner-agent harness export --out DIR`)")
    try:
        db_path = store or Settings.from_env().store_path
        if not db_path.is_file():
            raise fail(f"no trajectory store at {db_path}")
        tasks = load_suite(suite) if suite is not None else None
        with TrajectoryStore(db_path, create=False) as db:
            found = run_analysis(db, collection, tasks)
        proposals, notes = propose(found, recipe=recipe, harness=harness)
    except PlannerRuntimeError as exc:  # not a store, no such collection, a recipe that cannot be read
        raise fail(str(exc).splitlines()[0]) from exc  # one line (a driver's message may add a link)
    written: list[Path] = []
    if out is not None:
        try:
            written = write_proposals(proposals, out)
        except PlannerRuntimeError as exc:
            raise fail(str(exc)) from exc
        (out / "analysis.json").write_text(json.dumps(found.to_json(), indent=2) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps({"analysis": found.to_json(), "proposals": [p.to_json() for p in proposals], "notes": notes,
                          "written": [str(p) for p in written]}))
        return
    _print(found, proposals, notes, written)


def _print(found, proposals, notes, written) -> None:  # noqa: ANN001 - Analysis, [Proposal], [str], [Path]
    console.print(f"collection {escape(found.collection)}: {found.attempts} attempts, {found.failures} failed, "
                  f"{found.infra} infra (left out), {found.unscored} unscored", soft_wrap=True)
    table = Table("dimension", "cluster", "failed", "rate", "examples", title="top failure clusters")
    for s in found.clusters()[:TOP]:
        table.add_row(s.dimension, escape(s.key), f"{s.failures}/{s.attempts}", f"{s.rate:.0%}", escape(", ".join(s.examples)))
    console.print(table)
    for dimension in ("category", "domain"):
        console.print(f"[bold]success by {dimension}[/bold]: " + ", ".join(
            f"{escape(s.key)} {s.attempts - s.failures}/{s.attempts}" for s in found.rates(dimension)), soft_wrap=True)
    for p in proposals:
        console.print(f"[green]proposal[/green] {escape(p.id)} → {escape(p.target)}: {escape(p.summary)} "
                      f"({p.motivation.count} trajectories)", soft_wrap=True)
    for line in notes:
        err.print(f"note: {line}", markup=False, soft_wrap=True)
    if written:
        console.print(f"{len(written)} proposals and analysis.json written to {escape(str(written[0].parent))}")
