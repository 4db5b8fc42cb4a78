"""``planner-agent collect``, ``replay``, ``devices`` and ``export sft``: episodes on the farm,
failures replayed, the devices they run on, and the data they become."""

from __future__ import annotations

import json
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import ExitCode, console, err, fail, make_planner, print_step
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import ConfigError, PlannerRuntimeError

export_app = typer.Typer(help="Export trajectories for training.", no_args_is_help=True)


def collect(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids (repeat the option)."),
    split: Optional[str] = typer.Option(None, "--split", help="Only the train or the test split."),
    devices: int = typer.Option(4, "--devices", "-n", min=1, help="Episodes in parallel (and virtual phones, without --adb/--appium)."),
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="Use the phones of this adb server (repeat for several); needs --allow-reset."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="local, scripted or openai://host:port/model."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: JSON {task id: [calls]}."),
    repeat: Optional[int] = typer.Option(None, "--repeat", "-k", min=1, help="Episodes per task (default 1; on --resume it may grow)."),
    resume: Optional[str] = typer.Option(None, "--resume", help="A collection id to continue with what it was started with (finished items are skipped)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The device pool's lock and fault records."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for the episodes (allow: [purchase, pay, ...]); deny by default."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Step limit of every episode (default: each task's own)."),
    planner_timeout: Optional[float] = typer.Option(None, "--planner-timeout", min=0.1, help="Seconds to wait for an openai:// planner's answer."),
    allow_reset: bool = typer.Option(False, "--allow-reset", help="Let task setup wipe app data on phones that are not virtual or disposable."),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON on stdout (progress goes to stderr)."),
) -> None:
    """Run a suite's tasks K times each over N devices in parallel; infra failures retried elsewhere.

    Exit status: 0 when every item ran to a verdict (failed verdicts are results, not a failed
    job), 3 when items stayed infra faults after their retries, 2 for a usage error, 130 on Ctrl-C
    (running episodes are stored as interrupted at once and end at their next turn; the
    collection id and the command that resumes it are printed).
    """
    from device_farm.errors import DeviceError
    from planner_runtime.runs.collect import CollectionStopped, check_reset, ready_check
    from planner_runtime.runs.collect import collect as run_collection
    from planner_runtime.contract import new_id
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.trajectories.store import TrajectoryStore

    coll = resume or new_id("coll_")
    again = resume_command(coll, store=store, adb=adb, devices=devices, state_dir=state_dir, allow_reset=allow_reset,
                           planner_timeout=planner_timeout)
    try:
        options = dict(suite=suite, tasks=task, split=split, repeat=repeat, planner=planner, model=model, script=script,
                       policy=_policy(policy), max_steps=max_steps)
        settings = Settings.from_env()
        path = store or settings.store_path
        with ExitStack() as stack:
            # everything that can refuse is checked before a new store is created
            db = None if resume is None else stack.enter_context(TrajectoryStore(path, create=False))
            spec = _spec(db, resume, path, options, planner or settings.planner)
            tasks = _tasks(spec)
            planner_for = _planners(spec, planner_timeout)
            disposable = _disposable(settings)
            pool = stack.enter_context(pool_from_options(adb or [], 0 if adb else devices, state_dir))
            for line in ready_check(pool):
                err.print(f"warning: {line}; collecting on the others", soft_wrap=True, markup=False)
            wiped = check_reset(pool, disposable, allow_reset)
            if wiped:
                err.print(f"[yellow]warning:[/yellow] --allow-reset: every task's setup deletes app data on {', '.join(wiped)}")
            db = db or stack.enter_context(TrajectoryStore(path, create=True))
            db.record_collection(coll, spec.model_dump(mode="json"))
            counts = _run(run_collection, tasks, spec, coll=coll, pool=pool, db=db, planner_for=planner_for,
                          workers=devices, allow_reset=allow_reset, disposable=disposable)
    except KeyboardInterrupt:
        err.print(f"interrupted: collection {coll} keeps its finished items; resume it with\n  {again}", soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.interrupted) from None
    except CollectionStopped as exc:
        raise fail(str(exc), ExitCode.failed) from exc
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    report = {"collection": coll, "total": counts.total, "succeeded": counts.success, "failed": counts.failed,
              "infra_retried": counts.infra, "skipped": counts.skipped, "gave_up": counts.gave_up}
    if as_json:
        print(json.dumps(report))
    else:
        console.print(
            f"collection {coll}: {counts.success} succeeded, {counts.failed} failed, {counts.infra} infra episodes retried, "
            f"{counts.skipped} skipped (done before), {len(counts.gave_up)} given up"
        )
    if counts.gave_up:
        err.print("given up after repeated infra failures (not counted against the planner): " + ", ".join(counts.gave_up)
                  + f"\nrun them again with\n  {again}", soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.infra)


def _spec(db, resume: str | None, path: Path, options: dict, planner: str):  # noqa: ANN001, ANN202 - store -> CollectionSpec
    """A new collection's spec from the options, or the recorded one of ``resume`` checked against them."""
    from planner_runtime.runs.collection_spec import CollectionSpec

    if resume is None:
        return CollectionSpec.from_options(**{**options, "planner": planner})
    recorded = db.collection_spec(resume)
    if recorded is None and not db.has_collection(resume):
        raise fail(f"no collection {resume!r} in {path}; see `planner-agent trajectories list` for ids", ExitCode.usage)
    if recorded is None:  # a collection from a release that kept no spec resumes with the options given now
        return CollectionSpec.from_options(**{**options, "planner": planner})
    return CollectionSpec.model_validate(recorded).resumed_with(**options)


def _run(run_collection, tasks, spec, *, coll, pool, db, planner_for, workers, allow_reset, disposable):  # noqa: ANN001, ANN202
    """The collection with a live progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        row = bar.add_task("collecting", total=len(tasks) * spec.repeat)

        def show(p) -> None:  # noqa: ANN001 - collect.Progress
            bar.update(row, completed=p.done + p.skipped,
                       description=f"[green]{p.success} ok[/green] [red]{p.failed} failed[/red] [yellow]{p.infra} infra[/yellow]")

        def stopping(ids: list[str]) -> None:
            bar.stop()
            err.print(f"stopping: {len(ids)} running episode{'' if len(ids) == 1 else 's'} stored as interrupted; "
                      "waiting for the current steps to end (Ctrl-C again to quit at once)", soft_wrap=True, markup=False)

        _, counts = run_collection(tasks, pool=pool, store=db, planner_for=planner_for, workers=workers, repeat=spec.repeat,
                                   collection=coll, on_change=show, policy=spec.policy, max_steps=spec.max_steps,
                                   allow_reset=allow_reset, disposable=disposable, on_interrupt=stopping)
    return counts


def resume_command(coll: str, *, store: Path | None, adb: list[str] | None, devices: int, state_dir: Path | None,
                   allow_reset: bool, planner_timeout: float | None) -> str:
    """The command that continues ``coll`` on the same devices and store (the rest is recorded)."""
    import shlex

    words = ["planner-agent", "collect", "--resume", coll]
    words += ["--store", str(store)] if store else []
    for address in adb or []:
        words += ["--adb", address]
    words += ["-n", str(devices)]
    words += ["--state-dir", str(state_dir)] if state_dir else []
    words += ["--planner-timeout", f"{planner_timeout:g}"] if planner_timeout else []
    words += ["--allow-reset"] if allow_reset else []
    return shlex.join(words)


def _policy(path: Path | None):  # noqa: ANN202 - a Policy, or None when not given
    from planner_runtime.harness.safety import Policy

    return Policy.load(path) if path else None


def _tasks(spec):  # noqa: ANN001, ANN202 - CollectionSpec -> list[TaskSpec]
    from planner_runtime.tasks.spec import builtin_suite

    tasks = list((_suite(spec) if spec.suite else builtin_suite()).tasks)
    unknown = set(spec.tasks) - {t.id for t in tasks}
    if unknown:
        raise fail(f"no task {sorted(unknown)[0]!r}; see `planner-agent tasks list`")
    if spec.tasks:
        tasks = [t for t in tasks if t.id in spec.tasks]
    if spec.split:
        tasks = [t for t in tasks if t.split_name == spec.split]
    if not tasks:
        raise fail("no task matches --task and --split")
    return tasks


def _suite(spec):  # noqa: ANN001, ANN202 - CollectionSpec -> Suite
    """The collection's suite file as it was when the collection started (older records: as it is now)."""
    import tempfile

    from planner_runtime.tasks.spec import load_suite

    if spec.suite_text is None:
        return load_suite(Path(spec.suite))
    with tempfile.TemporaryDirectory(prefix="planner-agent-suite-") as folder:
        kept = Path(folder) / Path(spec.suite).name  # the loader reads files; its messages keep the file's name
        kept.write_text(spec.suite_text, encoding="utf-8")
        return load_suite(kept)


def _planners(spec, timeout: float | None):  # noqa: ANN001, ANN202 - CollectionSpec -> (TaskSpec -> Planner)
    """One planner per episode for scripted runs (each task's own calls), else one shared by every worker."""
    from planner_runtime.runs.collect import shared
    from planner_runtime.planners.scripted import ScriptedPlanner

    if spec.planner == "scripted":
        if not spec.script:
            raise ConfigError("--planner scripted needs --script FILE (JSON {task id: [calls]})")
        scripts = _scripts(Path(spec.script), spec.script_text)
        return lambda t: ScriptedPlanner(scripts.get(t.id, []))
    one = shared(make_planner(spec.planner, spec.model, None, **_timeout(timeout)))
    return lambda t: one


def _timeout(seconds: float | None) -> dict[str, float]:
    """make_planner's ``timeout`` when --planner-timeout was given (else the backend's default)."""
    return {} if seconds is None else {"timeout": seconds}


def _scripts(path: Path, text: str | None) -> dict:
    """The calls of ``path``: its ``text`` as recorded with the collection, else the file now."""
    try:
        scripts = json.loads(path.read_text(encoding="utf-8") if text is None else text)
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"--script {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from exc
    except json.JSONDecodeError as exc:
        raise fail(f"--script {path}: not JSON ({exc})") from exc
    if not isinstance(scripts, dict) or not all(isinstance(calls, list) for calls in scripts.values()):
        raise fail(f"--script {path}: expected a JSON object {{task id: [calls]}}")
    return scripts


def _disposable(settings: Settings) -> frozenset[str]:
    """Serials the user marked disposable (PLANNER_AGENT_DISPOSABLE_SERIALS), as a set."""
    value = getattr(settings, "disposable_serials", None) or ()
    if isinstance(value, str):
        value = value.split(",")
    return frozenset(s.strip() for s in value if s.strip())


def replay(
    trajectory_id: Optional[str] = typer.Argument(None, help="A stored trajectory id."),
    from_step: Optional[int] = typer.Option(None, "--from-step", min=0, help="Re-plan from this step with --planner (0-based)."),
    failed: bool = typer.Option(False, "--failed", help="Re-execute every failed trajectory (with --since)."),
    since: Optional[datetime] = typer.Option(None, "--since", help="With --failed: only those started at or after this date."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="With --from-step: the planner that takes over."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
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
            make = lambda: make_planner(planner or settings.planner, model, script, **_timeout(planner_timeout))  # noqa: E731
            brain = None if from_step is None else make()  # one that cannot be made is refused before any phone starts
            for traj_id in ids:
                traj = db.get(traj_id)
                task = tasks.get(traj.task_id or "")
                if from_step is not None:  # before its phone starts
                    _check_step(traj, from_step)
                with open_device(serial, host, port, say=say) as (device, identity):
                    ref, source = identity.device, identity.source
                    if source is not Source.sandbox and not allow_reset and ref.serial not in _disposable(settings):
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


def devices(
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="An adb server host:port (repeat for several; default: the configured one)."),
    virtual: int = typer.Option(0, "--virtual", min=0, help="Also start this many built-in virtual phones."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The pool's lock and fault records (default: shared on this host)."),
    appium: Optional[list[str]] = typer.Option(None, "--appium", help="An Appium server URL (repeat for several; capabilities from PLANNER_AGENT_APPIUM_CAPS)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every device with its health, holder and fault counts.

    Exit status: 0 when the listing was made (an unreachable source is reported in it), 2 for a
    usage error, 3 when the devices could not be listed.
    """
    from device_farm.errors import DeviceError
    from planner_runtime.cli.devices import devices_json, devices_table, pool_from_options

    try:
        settings = Settings.from_env()
        addresses = adb or ([] if virtual or appium else [settings.adb])
        urls = appium or ([settings.appium_url] if settings.appium_url and not adb else [])
        for address in addresses:
            parse_host_port(address)
        pool = pool_from_options(addresses, virtual, state_dir, [(url, settings.appium_caps) for url in urls])
        with pool:
            rows = pool.status()
    except DeviceError as exc:  # say what failed, no traceback wall
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(devices_json(rows, pool.source_errors, pool.sources), indent=2))
        return
    for name, problem in pool.source_errors.items():
        err.print(f"[yellow]{name}: {problem}[/yellow]")
    console.print(devices_table(rows) if rows else "no devices")


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
