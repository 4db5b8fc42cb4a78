"""``planner-agent replay``: a stored trajectory's calls re-run on a fresh phone and compared
with the record, or the episode re-planned from a step by another planner."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.release_option import RELEASE_HELP, model_option
from planner_runtime.cli.common import ExitCode, console, disposable_serials, err, fail, make_planner, planner_timeout_option, print_step
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError


def replay(
    trajectory_id: Optional[str] = typer.Argument(None, help="A stored trajectory id."),
    from_step: Optional[int] = typer.Option(None, "--from-step", min=0, help="Re-plan from this step with --planner (0-based)."),
    failed: bool = typer.Option(False, "--failed", help="Re-execute every failed trajectory (with --since)."),
    since: Optional[datetime] = typer.Option(None, "--since", help="With --failed: only those started at or after this date."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="With --from-step: the planner that takes over."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    release: Optional[str] = typer.Option(None, "--release", help=RELEASE_HELP),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: a JSON list of tool calls."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Replay on this attached phone (needs --allow-reset)."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file); it must exist."),
    planner_timeout: Optional[float] = typer.Option(None, "--planner-timeout", min=0.1, help="Seconds to wait for an openai:// planner's answer."),
    allow_reset: bool = typer.Option(False, "--allow-reset", help="Let replay seed and drive a phone that is not virtual or disposable."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per replayed trajectory on stdout."),
) -> None:
    """Re-execute a trajectory's calls on a fresh phone and show the first step that differs,
    or re-plan it from a step with another planner and compare verdicts.

    Exit status: 0 when every re-execution reproduced its record exactly (whatever the verdict),
    or the re-planned episode succeeded; 1 when a replay diverged or the re-planned episode did
    not succeed; 2 for a usage error; 3 for a device or planner endpoint fault.
    """
    from device_farm.errors import DeviceError
    from planner_runtime.contract import Source
    from planner_runtime.runs.replay import reexecute, replan
    from planner_runtime.runs.run import open_device
    from planner_runtime.tasks.spec import builtin_suite
    from planner_runtime.trajectories.store import TrajectoryStore

    say = lambda m: err.print(f"[dim]{m}[/dim]")  # noqa: E731
    good = True
    try:
        settings = Settings.from_env()
        host, port = parse_host_port(adb or settings.adb)
        tasks = {t.id: t for t in builtin_suite().tasks}
        with TrajectoryStore(store or settings.store_path, create=False) as db:
            if failed:
                ids = list(db.ids(success=False, infra=False, since=since))  # infra faults are no failure of the planner's
            elif trajectory_id:
                ids = [trajectory_id]
            else:
                raise fail("give a trajectory id or --failed")
            make = lambda: make_planner(planner or settings.planner, model_option(model, release, planner or settings.planner), script, **planner_timeout_option(planner_timeout))  # noqa: E731
            brain = None if from_step is None else make()  # one that cannot be made is refused before any phone starts
            for traj_id in ids:
                traj = db.get(traj_id)
                task = tasks.get(traj.task_id or "")
                if from_step is not None:  # before its phone starts
                    _check_step(traj, from_step)
                with open_device(serial, host, port, say=say) as (device, identity):
                    ref, source = identity.device, identity.source
                    if source is not Source.sandbox and not allow_reset and ref.serial not in disposable_serials(settings):
                        raise fail(f"replay seeds and drives the phone, which changes its data, and {ref.serial} is not "
                                   "a virtual phone: pass --allow-reset if it may be wiped, or list it in "
                                   "PLANNER_AGENT_DISPOSABLE_SERIALS")
                    if source is not Source.sandbox:
                        err.print(f"[yellow]warning:[/yellow] replay resets app data on {ref.serial}")
                    if from_step is None:
                        report = reexecute(traj, device, task)
                        good &= report.divergence is None
                        _print_reexecuted(traj, report, as_json)
                        continue
                    new = replan(traj, from_step, planner=brain, device=device, identity=identity, store=db,
                                 task=task, on_step=None if as_json else print_step)
                    brain = make()  # the next trajectory's planner starts afresh (a script from its first call)
                    old_v = traj.verdict.success if traj.verdict else None
                    new_v = new.verdict.success if new.verdict else None
                    good &= bool(new_v)
                    if as_json:
                        print(json.dumps({"trajectory": traj.id, "from_step": from_step, "planner": brain.name,
                                          "recorded_success": old_v, "success": new_v, "new_trajectory": new.id}))
                    else:
                        console.print(f"recorded verdict: {old_v}  re-planned from step {from_step + 1} with {brain.name}: {new_v}  → {new.id}")
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if not good:
        raise typer.Exit(ExitCode.failed)


def _check_step(traj, from_step: int) -> None:  # noqa: ANN001 - Trajectory
    """Refuse a ``--from-step`` the trajectory does not have."""
    if not traj.steps:
        raise fail(f"{traj.id} has no steps to re-plan from")
    if not 0 <= from_step < len(traj.steps):
        raise fail(f"--from-step must be 0..{len(traj.steps) - 1} for {traj.id}")


def _print_reexecuted(traj, report, as_json: bool) -> None:  # noqa: ANN001 - Trajectory, ReplayReport
    diff = report.divergence
    verdict = None if report.verdict is None else report.verdict.success
    if as_json:
        print(json.dumps({"trajectory": traj.id, "task_id": traj.task_id, "steps_replayed": report.steps_replayed,
                          "reproduced": diff is None, "success": verdict,
                          "divergence": None if diff is None else {"step": diff.step, "what": diff.what,
                                                                   "recorded": diff.recorded, "replayed": diff.replayed}},
                         default=str))
        return
    where = "reproduced exactly" if diff is None else (
        f"step {diff.step + 1} differs in {diff.what}: recorded {diff.recorded!r}, now {diff.replayed!r}")
    shown = "-" if verdict is None else ("success" if verdict else "failed")
    console.print(f"[bold]{traj.id}[/bold] {traj.task_id or traj.goal!r}: {report.steps_replayed} calls re-run, {where}; verdict now {shown}")
