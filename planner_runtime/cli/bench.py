"""``planner-agent bench``: a suite on the device pool with one or several planners side by side,
reported as the MobilePA-style table (``--json``, ``--html FILE`` for a self-contained page)."""

from __future__ import annotations

import json
import shlex
from contextlib import ExitStack
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import ExitCode, console, disposable_serials, err, fail
from planner_runtime.cli.ray_option import RAY_HELP, RAY_HOSTS_HELP, check_ray_options, ray_farm
from planner_runtime.cli.simulator_option import SIMULATOR_HELP, llm_simulator, simulator_address
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

SPLITS = ("train", "test", "all")


def bench(
    suite: str = typer.Option("builtin", "--suite", help="A task suite YAML file, or 'builtin' (every built-in task)."),
    split: str = typer.Option("all", "--split", help="train, test or all."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids (repeat the option)."),
    per_template: Optional[int] = typer.Option(None, "--per-template", min=1, help="Only the first N tasks of each task template, as the suite lists them (with --split test --per-template 1: one task of every held-out template)."),
    planner: Optional[list[str]] = typer.Option(None, "--planner", "-p", help="local, scripted or openai://host:port/model; repeat to bench several side by side."),
    script: Optional[list[Path]] = typer.Option(None, "--script", help="JSON {task id: [calls]} for each --planner scripted, in the same order."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    release: Optional[list[str]] = typer.Option(None, "--release", help="For each --planner local, in order: a trained release by name ('base': the untrained model)."),
    phones: int = typer.Option(4, "--phones", "-n", min=1, help="Episodes in parallel (and virtual phones, without --adb)."),
    repeats: int = typer.Option(1, "--repeats", "-k", min=1, help="Episodes per task and planner (repeat k draws random parameters with seed k)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for every planner's episodes (allow: [send, pay, ...]); deny by default, so a task that needs a sensitive action fails for every planner without it."),
    first_seed: Optional[int] = typer.Option(None, "--first-seed", min=0, help="Repeat k of a template with random parameters runs its seed FIRST_SEED + k: fresh seeds, never trained on (training data is made from seeds 0, 1, ...)."),
    resume: Optional[str] = typer.Option(None, "--resume", help="A bench id: run its unfinished items with what it was started with, then report."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The device pool's lock and fault records."),
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="Use the phones of this adb server (repeat for several); needs --allow-reset."),
    allow_reset: bool = typer.Option(False, "--allow-reset", help="Let task setup wipe app data on phones that are not virtual or disposable."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Step limit of every episode (default: each task's own)."),
    planner_timeout: Optional[float] = typer.Option(None, "--planner-timeout", min=0.1, help="Seconds to wait for an openai:// planner's answer."),
    simulator: Optional[str] = typer.Option(None, "--simulator", help=SIMULATOR_HELP),
    ray: Optional[str] = typer.Option(None, "--ray", help=RAY_HELP),
    ray_hosts: Optional[int] = typer.Option(None, "--ray-hosts", min=1, help=RAY_HOSTS_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only the report as JSON on stdout (progress goes to stderr)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the report as a self-contained HTML page."),
) -> None:
    """Bench planners on a suite: success per category, domain and difficulty with 95% intervals,
    steps, tokens and $ per 1,000 tasks; infra failures retried and reported apart, never scored.

    Exit status: 0 when every item was scored, 3 when items stayed infra faults after their
    retries (the report is still printed), 2 for a usage error, 130 on Ctrl-C (the bench id and
    the command that resumes it are printed).

    With --ray, every planner's episodes run on the device hosts of a Ray cluster, -n at once on
    each (see `collect --help`); the store and the report stay here.
    """
    from device_farm.errors import DeviceError
    from planner_runtime.bench.page import render_page
    from planner_runtime.bench.report import PlannerReport, bench_json, print_tables
    from planner_runtime.bench.runner import results, run_contender
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.contract import new_id
    from planner_runtime.runs.collect import CollectionStopped, check_reset, ready_check
    from planner_runtime.trajectories.store import TrajectoryStore

    bench_id = resume or new_id("bench_")
    again = shlex.join(["planner-agent", "bench", "--resume", bench_id, *(["--store", str(store)] if store else []),
                        *(w for address in adb or [] for w in ("--adb", address)), "-n", str(phones),
                        *(["--state-dir", str(state_dir)] if state_dir else []),
                        *(["--planner-timeout", f"{planner_timeout:g}"] if planner_timeout else []),
                        *(["--allow-reset"] if allow_reset else []), *(["--ray", ray] if ray else []),
                        *(["--ray-hosts", str(ray_hosts)] if ray_hosts else [])])
    try:
        check_ray_options(ray, ray_hosts)
        if split not in SPLITS:
            raise fail(f"--split {split!r}: choose train, test or all")
        if html is not None and not html.parent.is_dir():
            raise fail(f"--html {html}: folder {html.parent} does not exist")
        settings = Settings.from_env()
        path = store or settings.store_path
        with ExitStack() as stack:
            # everything that can refuse is checked before a new store is created
            db = None if resume is None else stack.enter_context(TrajectoryStore(path, create=False))
            if db is not None:
                _no_work_options(suite=suite != "builtin", split=split != "all", task=task, per_template=per_template, planner=planner,
                                 script=script, model=model, release=release, repeats=repeats != 1, max_steps=max_steps, first_seed=first_seed,
                                 policy=policy, simulator=simulator)
                specs = _recorded(db, bench_id, path)
            else:
                specs = _new_specs(suite, split, task, planner or [settings.planner], script or [], model, repeats, max_steps,
                                   release or [], first_seed or 0, policy, simulator_address(simulator), per_template)
            tasks = _tasks(specs[0])
            contenders = _contenders(bench_id, specs, planner_timeout)
            disposable = disposable_serials(settings)
            pool = farm = None
            if ray is not None:  # each host builds and checks its own pool once started
                farm = stack.enter_context(ray_farm(ray, ray_hosts, adb, phones, state_dir))
            else:
                pool = stack.enter_context(pool_from_options(adb or [], 0 if adb else phones, state_dir))
                for line in ready_check(pool):
                    err.print(f"warning: {line}; benching on the others", soft_wrap=True, markup=False)
                check_reset(pool, disposable, allow_reset)
            db = db or stack.enter_context(TrajectoryStore(path, create=True))
            for contender, spec in zip(contenders, specs):  # all before any runs, so a resume finds every planner
                db.record_collection(contender.collection, spec.model_dump(mode="json"))
            reports = []
            for contender, spec in zip(contenders, specs):
                _, wall = _with_bar(run_contender, tasks, contender, pool=pool, store=db, workers=phones,
                                    repeat=spec.repeat, first_seed=spec.first_seed, max_steps=spec.max_steps, policy=spec.policy,
                                    allow_reset=allow_reset, disposable=disposable, farm=farm, on_warning=_warn,
                                    simulator=llm_simulator(spec.simulator))
                reports.append(PlannerReport.of(contender.label, contender.planner, contender.collection, tasks,
                                                results(db, contender.collection, tasks, settings.prices), wall))
    except KeyboardInterrupt:
        err.print(f"interrupted: bench {bench_id} keeps its finished items; resume it with\n  {again}", soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.interrupted) from None
    except CollectionStopped as exc:
        from planner_runtime.runs.distributed import HostsLost  # Ray itself is imported only with --ray

        stopped = str(exc).split("; finished items")[0]  # collect's own resume hint names one collection, not the bench
        code = ExitCode.infra if isinstance(exc, HostsLost) else ExitCode.failed
        raise fail(f"{stopped}; finished items are kept, continue with {again}", code) from exc
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    suite_name = specs[0].suite or "builtin"
    if html is not None:
        html.write_text(render_page(bench_id, suite_name, specs[0].split or "all", specs[0].repeat, reports), encoding="utf-8")
    if as_json:
        print(json.dumps(bench_json(bench_id, suite_name, specs[0].split or "all", specs[0].repeat, reports)))
    else:
        console.print(f"bench {bench_id}: {len(tasks)} tasks × {specs[0].repeat} repeats, suite {suite_name}, split {specs[0].split or 'all'}")
        print_tables(console, reports)
    unscored = [f"{r.label}: {item}" for r in reports for item in r.results.unscored]
    if unscored:
        err.print("given up after repeated infra failures (scored for no one): " + ", ".join(unscored)
                  + f"\nrun them again with\n  {again}", soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.infra)


def _no_work_options(**given: object) -> None:
    """With ``--resume`` a bench runs what it was started with: options that decide its work are refused."""
    named = [name for name, value in given.items() if value]
    if named:
        raise fail(f"--resume runs the bench as it was started: leave out --{named[0].replace('_', '-')}")


def _new_specs(suite: str, split: str, task, planner: list[str], script: list[Path], model, repeats: int, max_steps,  # noqa: ANN001, ANN202
               release: list[str], first_seed: int = 0, policy: Path | None = None, simulator: str | None = None,
               per_template: int | None = None):
    """One collection spec per planner; the k-th ``scripted`` planner takes the k-th ``--script``
    and, when releases are given, the k-th ``local`` one the k-th ``--release``."""
    from planner_runtime.cli.release_option import model_option
    from planner_runtime.harness.safety import Policy
    from planner_runtime.runs.collection_spec import CollectionSpec

    local = sum(p == "local" for p in planner)
    if release and len(release) != local:
        raise fail(f"{local} --planner local and {len(release)} --release: give one --release per local planner, in order")
    models = iter([model_option(model, r) for r in release] or [model_option(model, None)] * local)

    scripted = sum(p == "scripted" for p in planner)
    if len(script) != scripted:
        raise fail(f"{scripted} --planner scripted and {len(script)} --script: give one --script per scripted planner, in order")
    suite_path = None if suite == "builtin" else Path(suite)
    if suite_path is not None and not suite_path.is_file():
        raise fail(f"--suite {suite}: no such file (or 'builtin' for the built-in tasks)")
    scripts = iter(script)
    return [CollectionSpec.from_options(suite=suite_path, tasks=task, script=next(scripts) if p == "scripted" else None,
                                        split=None if split == "all" else split, per_template=per_template, repeat=repeats, planner=p,
                                        model=next(models) if p == "local" else None, max_steps=max_steps, first_seed=first_seed,
                                        simulator=simulator,
                                        **({"policy": Policy.load(policy)} if policy else {}))
            for p in planner]


def _recorded(db, bench_id: str, path: Path):  # noqa: ANN001, ANN202 - store -> list[CollectionSpec]
    from planner_runtime.bench.runner import collection_of
    from planner_runtime.runs.collection_spec import CollectionSpec

    specs = []
    while (recorded := db.collection_spec(collection_of(bench_id, len(specs)))) is not None:
        specs.append(CollectionSpec.model_validate(recorded))
    if not specs:
        raise fail(f"no bench {bench_id!r} in {path}")
    return specs


def _tasks(spec):  # noqa: ANN001, ANN202 - CollectionSpec -> list[TaskSpec]
    from planner_runtime.cli.collect import _tasks as selected

    return selected(spec)


def _contenders(bench_id: str, specs, timeout: float | None):  # noqa: ANN001, ANN202 - -> list[Contender]
    """Each spec's planner, labelled by its --planner (and script) so two of a kind stay apart."""
    import functools

    from planner_runtime.bench.runner import Contender, collection_of
    from planner_runtime.cli.collect import _planners, host_planners

    labels: list[str] = []
    for spec in specs:
        label = f"scripted:{Path(spec.script).stem}" if spec.planner == "scripted" and spec.script else spec.planner
        if spec.planner == "local" and (spec.model or "").startswith("release:"):
            label = f"local:{spec.model.removeprefix('release:')}"
        labels.append(label if label not in labels else f"{label} #{sum(lab.split(' #')[0] == label for lab in labels) + 1}")
    return [Contender(label=label, planner=spec.planner, collection=collection_of(bench_id, i), planner_for=_planners(spec, timeout),
                      on_host=functools.partial(host_planners, spec, timeout, {}))
            for i, (label, spec) in enumerate(zip(labels, specs))]


def _warn(line: str) -> None:
    err.print(f"warning: {line}", soft_wrap=True, markup=False)


def _with_bar(run, tasks, contender, **options):  # noqa: ANN001, ANN202
    """One contender's collection with a live progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        row = bar.add_task(contender.label, total=len(tasks) * options["repeat"])

        def show(p) -> None:  # noqa: ANN001 - collect.Progress
            bar.update(row, completed=p.done + p.skipped,
                       description=f"{contender.label} [green]{p.success} ok[/green] [red]{p.failed} failed[/red] [yellow]{p.infra} infra[/yellow]")

        return run(tasks, contender, on_change=show, **options)
