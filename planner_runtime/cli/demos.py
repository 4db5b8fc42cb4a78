"""``planner-agent tasks demos``: play every task's demo on virtual phones and name the ones their
own verifier fails, one line per task.

Exit statuses follow :class:`~planner_runtime.cli.common.ExitCode`: 0 when every demo passed, 1
when a demo failed its task's checks (a broken reference solution), 2 for a usage error (a bad
suite, a task id that is not in it), 3 when episodes stayed infra faults after their retries.
The episodes go to a scratch store unless ``--store`` names one: a check adds no training data.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from planner_runtime.cli.common import ExitCode, console, err, fail
from planner_runtime.errors import PlannerRuntimeError


def tasks_demos(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: the built-in suites)."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids (repeat the option)."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Instances of each template with random parameters (seeds 0..N-1)."),
    devices: int = typer.Option(4, "--devices", "-n", min=1, help="Virtual phones playing demos in parallel."),
    store: Optional[Path] = typer.Option(None, "--store", help="Keep the episodes in this trajectory store (default: a scratch one)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON (only JSON on stdout)."),
) -> None:
    """Play each task's demo (its reference solution) on fresh virtual phones and check that the
    task's own verifier passes it; exit 1 naming every demo that fails."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from device_farm.errors import DeviceError
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.runs.demos import check_demos
    from planner_runtime.tasks.spec import builtin_suite, load_suite
    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        tasks = list((load_suite(suite) if suite else builtin_suite()).tasks)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    unknown = sorted(set(task or ()) - {t.id for t in tasks})
    if unknown:
        raise fail(f"no task {unknown[0]!r} in the suite; see `planner-agent tasks list`")
    tasks = [t for t in tasks if not task or t.id in task]
    bare = [t.id for t in tasks if not t.demo]
    say = err.print if as_json else console.print
    for task_id in bare:
        say(f"{task_id}  [yellow]no demo[/yellow]", soft_wrap=True)
    if len(bare) == len(tasks):
        raise fail("none of the chosen tasks has a demo")
    try:
        with ExitStack() as stack:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="planner-agent-demos-")))
            db = stack.enter_context(TrajectoryStore(store or folder / "demos.sqlite"))
            pool = stack.enter_context(pool_from_options([], devices, folder / "pool"))  # a check leaves no lease records
            bar = stack.enter_context(Progress(TextColumn("playing demos"), BarColumn(), MofNCompleteColumn(), console=err))
            row = bar.add_task("demos", total=None)

            def show(p) -> None:  # noqa: ANN001 - collect.Progress
                bar.update(row, total=p.total, completed=p.done + p.skipped)

            collection, counts, failures = check_demos(tasks, pool=pool, store=db, workers=devices, seeds=seeds, on_change=show)
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    for f in failures:
        say(f"{escape(f.task_id)}  [red]DEMO FAILS ITS VERIFIER[/red] {escape(f.reason)}", soft_wrap=True)
    say(f"{counts.total} demos played, {counts.success} passed, {len(failures)} failed"
        + (f", {len(counts.gave_up)} given up after infra faults" if counts.gave_up else "")
        + (f", {len(bare)} tasks without a demo" if bare else ""))
    if as_json:
        print(json.dumps({"collection": collection, "played": counts.total, "passed": counts.success,
                          "failed": [f.to_json() for f in failures], "gave_up": counts.gave_up, "no_demo": bare}, indent=2))
    if failures:
        raise typer.Exit(ExitCode.failed)
    if counts.gave_up:
        raise typer.Exit(ExitCode.infra)
