"""``planner-agent trajectories list``: find stored trajectories by task, outcome (the planner's
failures kept apart from infra faults), failure kind, planner, releases, source, collection and
date, as a table or as JSON for scripts. A trajectory's tokens are its total, its sub-agents'
share shown apart (``subagent_*`` and ``total_*`` in JSON; ``prompt_tokens`` and
``completion_tokens`` stay its own)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.table import Table

from planner_runtime.cli.common import fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

if TYPE_CHECKING:  # the store's sqlalchemy is imported by the command that reads it, not by every start
    from planner_runtime.trajectories.query import Summary

trajectories_app = typer.Typer(help="Stored trajectories: list and filter them.", no_args_is_help=True)
console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)  # piped: keep ids whole


def outcome(row: Summary) -> str:
    if row.success is None:
        return row.status if row.status in ("running", "interrupted", "infra_error") else "unverified"
    return "success" if row.success else f"failed ({row.failure_kind or '?'})"


def _table(rows: list[Summary]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    numbers = ("steps", "tokens in/out", "of which sub-agents")
    for name in ("id", "task", "outcome", *numbers, "planner", "harness", "source", "started (UTC)"):
        table.add_column(name, justify="right" if name in numbers else "left", no_wrap=name == "id")
    for r in rows:
        style = "green" if r.success else ("red" if r.success is False else "dim")
        shared = f"{r.subagent_prompt_tokens}/{r.subagent_completion_tokens} ({r.subagents})" if r.subagents else "-"
        table.add_row(
            r.id, r.task_id or r.goal[:40], f"[{style}]{outcome(r)}[/{style}]", str(r.steps),
            f"{r.total_prompt_tokens}/{r.total_completion_tokens}", shared, f"{r.planner} {r.planner_release}".strip(),
            r.harness_release or "-", r.source, r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    return table


@trajectories_app.command("list")
def list_trajectories(
    task: Optional[str] = typer.Option(None, "--task", help="Only this task id."),
    failed: bool = typer.Option(False, "--failed", help="Only the planner's verified failures (not infra faults: see --infra)."),
    infra: bool = typer.Option(False, "--infra", help="Only episodes an infra fault ended or spoiled (never scored against the planner)."),
    succeeded: bool = typer.Option(False, "--succeeded", help="Only verified successes."),
    failure_kind: Optional[str] = typer.Option(None, "--failure-kind", help="agent, infra or spec."),
    planner: Optional[str] = typer.Option(None, "--planner", help="Planner backend (local, openai, scripted)."),
    planner_release: Optional[str] = typer.Option(None, "--planner-release", help="Planner release."),
    harness_release: Optional[str] = typer.Option(None, "--harness-release", help="Harness release."),
    source: Optional[str] = typer.Option(None, "--source", help="sandbox, simulated or real."),
    collection: Optional[str] = typer.Option(None, "--collection", help="Only this `collect` run."),
    since: Optional[datetime] = typer.Option(None, "--since", help="Started at or after this date (UTC)."),
    until: Optional[datetime] = typer.Option(None, "--until", help="Started before this date (UTC)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the newest N."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (one object per trajectory)."),
) -> None:
    """List stored trajectories, oldest first, with their outcome, steps and tokens (sub-agents' included, shown apart)."""
    if sum((failed, succeeded, infra)) > 1:
        raise fail("--failed, --succeeded and --infra exclude each other")
    kinds = {"agent", "infra", "spec"}
    if failure_kind is not None and failure_kind not in kinds:
        raise fail(f"--failure-kind must be one of {', '.join(sorted(kinds))}")
    from planner_runtime.trajectories.query import Filter
    from planner_runtime.trajectories.store import TrajectoryStore

    where = Filter(
        task_id=task, success=False if (failed or failure_kind) else (True if succeeded else None),
        failure_kind=failure_kind, planner=planner, planner_release=planner_release,
        harness_release=harness_release, source=source, collection=collection, since=since, until=until,
        infra=True if infra else (False if failed and failure_kind is None else None),
    )
    try:
        with TrajectoryStore(store or Settings.from_env().store_path, create=False) as db:
            rows = db.query(where, limit=limit)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([{**asdict(r), "outcome": outcome(r)} for r in rows], default=str, indent=2))
        return
    if not rows:
        console.print("no trajectories match")
        return
    console.print(_table(rows))
    failures = sum(r.success is False for r in rows)
    console.print(f"{len(rows)} trajectories: {sum(bool(r.success) for r in rows)} succeeded, {failures} failed")
