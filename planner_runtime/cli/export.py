"""``planner-agent export sft``: stored trajectories as training data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import console, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

export_app = typer.Typer(help="Export trajectories for training.", no_args_is_help=True)


@export_app.command("sft")
def export_sft_cmd(
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file); it must exist."),
    task: Optional[str] = typer.Option(None, "--task", help="Only trajectories of this task."),
    include_failed: bool = typer.Option(False, "--include-failed", help="Also unverified and failed episodes (their ok turns)."),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON on stdout."),
) -> None:
    """SFT data in TRL's prompt-completion format; turns that drew an error are never targets.

    Exit status: 0 when the file was written (even with no rows), 2 for a usage error (a missing
    store, an unwritable --out).
    """
    from planner_runtime.data.export import export_sft
    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        with TrajectoryStore(store or Settings.from_env().store_path, create=False) as db:
            stats = export_sft(db, out, only_success=not include_failed, task_id=task)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps({"out": str(out), "rows": stats.rows, "trajectories": stats.trajectories,
                          "masked_turns": stats.masked_turns}))
        return
    console.print(f"{out}: {stats.rows} rows from {stats.trajectories} trajectories ({stats.masked_turns} error turns masked)")
