"""``planner-agent data build|explain``: draw a dataset from a trajectory store as a recipe file
says (:mod:`planner_runtime.data.recipe`, :mod:`planner_runtime.data.build`), or show what it
would draw without writing anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from planner_runtime.cli.common import console, err, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

data_app = typer.Typer(help="Datasets drawn from stored trajectories by a recipe: build, explain.", no_args_is_help=True)

RECIPE_HELP = "A recipe YAML file (name, select, weights, caps, dedup, size, seed)."
STORE_HELP = "Trajectory store (SQLite file); it must exist."


def _draw(recipe_path: Path, store: Optional[Path], out: Optional[Path] = None):  # noqa: ANN202 - a Draw or a Built
    from planner_runtime.data.build import build, explain
    from planner_runtime.data.recipe import load_recipe
    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        recipe = load_recipe(recipe_path)
        with TrajectoryStore(store or Settings.from_env().store_path, create=False) as db:
            return build(recipe, db, out) if out is not None else explain(recipe, db)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


@data_app.command("build")
def build_cmd(
    recipe: Path = typer.Option(..., "--recipe", help=RECIPE_HELP),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    out: Path = typer.Option(..., "--out", help="A new (or empty) folder for dataset.jsonl and manifest.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON on stdout."),
) -> None:
    """Draw the dataset the recipe says and write it with its manifest (counts per bucket,
    hashes). The same recipe on the same store writes the same bytes; a folder holding another
    dataset is never overwritten. Exit status 2 for a bad recipe, store or folder."""
    built = _draw(recipe, store, out)
    if as_json:
        print(json.dumps(built.manifest, sort_keys=True))
        return
    counts = built.draw.counts()
    state = "already there, unchanged" if built.unchanged else "written"
    console.print(f"dataset {built.draw.recipe.name}: {counts['drawn']} rows ({counts['distinct']} trajectories) of "
                  f"{counts['candidates']} candidates, {state} in {built.path}", markup=False, soft_wrap=True)
    console.print(f"sha256 {built.dataset_sha256}", markup=False)
    _notes(counts, built.draw.recipe.size)


def _notes(counts: dict, size: int) -> None:  # noqa: ANN001
    """What a user should know about a draw besides its table: short, or partly unreviewed."""
    if 0 < counts["drawn"] < size:
        err.print(f"note: the recipe asks for {size}, only {counts['drawn']} could be drawn (see what was kept out)",
                  markup=False, soft_wrap=True)
    waiting = counts["pending_review"]["drawn"]
    if waiting:
        err.print(f"note: {waiting} drawn rows are still waiting for review (included as the verifier judged them)",
                  markup=False, soft_wrap=True)
    if counts["drawn"] == 0:
        err.print("note: nothing would be drawn", markup=False)


@data_app.command("explain")
def explain_cmd(
    recipe: Path = typer.Option(..., "--recipe", help=RECIPE_HELP),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON on stdout."),
) -> None:
    """What the recipe would draw from the store, per bucket of each dimension, and what it
    keeps out (review, weight 0, dedup, caps); nothing is written."""
    draw = _draw(recipe, store)
    counts = draw.counts()
    if as_json:
        print(json.dumps({"recipe": draw.recipe.name, "recipe_sha256": draw.recipe.sha256, "size": draw.recipe.size,
                          "counts": counts}, sort_keys=True))
        return
    table = Table(title=f"recipe {draw.recipe.name}: {counts['drawn']} of {draw.recipe.size} drawn from {counts['candidates']} candidates")
    for column in ("dimension", "bucket", "weight", "candidates", "drawn", "share"):
        table.add_column(column, justify="left" if column in ("dimension", "bucket") else "right")
    for dim, buckets in counts["buckets"].items():
        for i, (bucket, n) in enumerate(buckets.items()):
            share = f"{n['drawn'] / counts['drawn']:.0%}" if counts["drawn"] else "-"
            table.add_row(dim if i == 0 else "", bucket, f"{draw.recipe.weight(dim, bucket):g}", str(n["candidates"]),
                          str(n["drawn"]), share)
        table.add_section()
    console.print(table)
    kept_out = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in counts["excluded"].items() if n) or "none"
    console.print(f"kept out: {kept_out}; relabelled in by review: {counts['relabelled_in']}; "
                  f"waiting for review: {counts['pending_review']['candidates']} candidates, {counts['pending_review']['drawn']} drawn",
                  markup=False, soft_wrap=True)
    _notes(counts, draw.recipe.size)
