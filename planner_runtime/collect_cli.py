"""``planner-agent collect``, ``replay``, ``devices`` and ``export sft``: episodes on the farm,
failures replayed, the devices they run on, and the data they become."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli_common import ExitCode, console, err, fail, make_planner, print_step
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError

export_app = typer.Typer(help="Export trajectories for training.", no_args_is_help=True)


def collect(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids (repeat the option)."),
    split: Optional[str] = typer.Option(None, "--split", help="Only the train or the test split."),
    devices: int = typer.Option(4, "--devices", "-n", help="Episodes in parallel (and virtual phones, without --adb/--appium)."),
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="Use the phones of this adb server (repeat for several)."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="local, scripted or openai://host:port/model."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: JSON {task id: [calls]}."),
    repeat: int = typer.Option(1, "--repeat", "-k", help="Episodes per task."),
    resume: Optional[str] = typer.Option(None, "--resume", help="A collection id to continue (finished items are skipped)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The device pool's lock and fault records."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for the episodes (allow: [purchase, pay, ...]); deny by default."),
) -> None:
    """Run a suite's tasks K times each over N devices in parallel; infra failures retried elsewhere."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from planner_runtime.collect import collect as run_collection
    from planner_runtime.collect import shared
    from planner_runtime.devices_view import pool_from_options
    from planner_runtime.harness.safety import Policy
    from planner_runtime.planners.scripted import ScriptedPlanner
    from planner_runtime.tasks.spec import builtin_suite, load_suite
    from planner_runtime.trajectories import TrajectoryStore

    settings = Settings.from_env()
    try:
        tasks = list((load_suite(suite) if suite else builtin_suite()).tasks)
        if task:
            unknown = set(task) - {t.id for t in tasks}
            if unknown:
                raise fail(f"no task {sorted(unknown)[0]!r}; see `planner-agent tasks list`")
            tasks = [t for t in tasks if t.id in task]
        if split:
            tasks = [t for t in tasks if t.split_name == split]
        backend = planner or settings.planner
        if backend == "scripted":
            scripts = json.loads(script.read_text()) if script else {}
            planner_for = lambda t: ScriptedPlanner(scripts.get(t.id, []))  # noqa: E731
        else:
            one = shared(make_planner(backend, model, None))
            planner_for = lambda t: one  # noqa: E731
        pool = pool_from_options(adb or [], 0 if adb else devices, state_dir)
        with TrajectoryStore(store or settings.store_path) as db, pool, Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
        ) as bar:
            row = bar.add_task("collecting", total=len(tasks) * repeat)

            def show(p) -> None:  # noqa: ANN001 - collect.Progress
                bar.update(row, completed=p.done + p.skipped,
                           description=f"[green]{p.success} ok[/green] [red]{p.failed} failed[/red] [yellow]{p.infra} infra[/yellow]")

            coll, counts = run_collection(tasks, pool=pool, store=db, planner_for=planner_for, workers=devices,
                                          repeat=repeat, collection=resume, on_change=show,
                                          policy=Policy.load(policy) if policy else None)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(
        f"collection {coll}: {counts.success} succeeded, {counts.failed} failed, {counts.infra} infra episodes retried, "
        f"{counts.skipped} skipped (done before), {len(counts.gave_up)} given up"
    )
    if counts.gave_up:
        console.print("given up after repeated infra failures: " + ", ".join(counts.gave_up))


def replay(
    trajectory_id: Optional[str] = typer.Argument(None, help="A stored trajectory id."),
    from_step: Optional[int] = typer.Option(None, "--from-step", help="Re-plan from this step with --planner (0-based)."),
    failed: bool = typer.Option(False, "--failed", help="Re-execute every failed trajectory (with --since)."),
    since: Optional[datetime] = typer.Option(None, "--since", help="With --failed: only those started at or after this date."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="With --from-step: the planner that takes over."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: a JSON list of tool calls."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Replay on this attached phone."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
) -> None:
    """Re-execute a trajectory's calls on a fresh phone and show the first step that differs,
    or re-plan it from a step with another planner and compare verdicts."""
    from planner_runtime.replay import reexecute, replan
    from planner_runtime.runner import open_device
    from planner_runtime.tasks.spec import builtin_suite
    from planner_runtime.trajectories import TrajectoryStore

    settings = Settings.from_env()
    host, port = parse_host_port(adb or settings.adb)
    tasks = {t.id: t for t in builtin_suite().tasks}
    say = lambda m: err.print(f"[dim]{m}[/dim]")  # noqa: E731
    try:
        with TrajectoryStore(store or settings.store_path) as db:
            if failed:
                ids = list(db.ids(success=False, since=since))
            elif trajectory_id:
                ids = [trajectory_id]
            else:
                raise fail("give a trajectory id or --failed")
            for traj_id in ids:
                traj = db.get(traj_id)
                task = tasks.get(traj.task_id or "")
                with open_device(serial, host, port, say=say) as (device, ref, source):
                    if from_step is None:
                        report = reexecute(traj, device, task)
                        diff = report.divergence
                        where = "reproduced exactly" if diff is None else (
                            f"step {diff.step + 1} differs in {diff.what}: recorded {diff.recorded!r}, now {diff.replayed!r}")
                        verdict = "-" if report.verdict is None else ("success" if report.verdict.success else "failed")
                        console.print(f"[bold]{traj.id}[/bold] {traj.task_id or traj.goal!r}: {report.steps_replayed} calls re-run, {where}; verdict now {verdict}")
                        continue
                    brain = make_planner(planner or settings.planner, model, script)
                    new = replan(traj, from_step, planner=brain, device=device, device_ref=ref, store=db,
                                 task=task, source=source, on_step=print_step)
                    old_v = traj.verdict.success if traj.verdict else None
                    new_v = new.verdict.success if new.verdict else None
                    console.print(f"recorded verdict: {old_v}  re-planned from step {from_step + 1} with {brain.name}: {new_v}  → {new.id}")
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


def devices(
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="An adb server host:port (repeat for several; default: the configured one)."),
    virtual: int = typer.Option(0, "--virtual", help="Also start this many built-in virtual phones."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The pool's lock and fault records (default: shared on this host)."),
    appium: Optional[list[str]] = typer.Option(None, "--appium", help="An Appium server URL (repeat for several; capabilities from PLANNER_AGENT_APPIUM_CAPS)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every device with its health, holder and fault counts."""
    from planner_runtime.devices_view import devices_json, devices_table, pool_from_options

    settings = Settings.from_env()
    addresses = adb or ([] if virtual or appium else [settings.adb])
    urls = appium or ([settings.appium_url] if settings.appium_url and not adb else [])
    pool = pool_from_options(addresses, virtual, state_dir, [(url, settings.appium_caps) for url in urls])
    try:
        with pool:
            rows = pool.status()
    except Exception as exc:  # device errors: say what failed, no traceback wall
        from device_farm.errors import DeviceError

        if isinstance(exc, DeviceError):
            raise fail(f"device: {exc}", ExitCode.infra) from exc
        raise
    if as_json:
        print(json.dumps(devices_json(rows, pool.source_errors, pool.sources), indent=2))
        return
    for name, problem in pool.source_errors.items():
        err.print(f"[yellow]{name}: {problem}[/yellow]")
    console.print(devices_table(rows) if rows else "no devices")


@export_app.command("sft")
def export_sft_cmd(
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    task: Optional[str] = typer.Option(None, "--task", help="Only trajectories of this task."),
    include_failed: bool = typer.Option(False, "--include-failed", help="Also unverified and failed episodes (their ok turns)."),
) -> None:
    """SFT data in TRL's prompt-completion format; turns that drew an error are never targets."""
    from planner_runtime.data.export import export_sft
    from planner_runtime.trajectories import TrajectoryStore

    try:
        with TrajectoryStore(store or Settings.from_env().store_path) as db:
            stats = export_sft(db, out, only_success=not include_failed, task_id=task)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"{out}: {stats.rows} rows from {stats.trajectories} trajectories ({stats.masked_turns} error turns masked)")
