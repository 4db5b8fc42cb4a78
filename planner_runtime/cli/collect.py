"""``planner-agent collect``: a suite's tasks run K times over a pool of N devices, resumable."""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.release_option import RELEASE_HELP, model_option
from planner_runtime.cli.common import ExitCode, console, disposable_serials, err, fail, make_planner, planner_timeout_option
from planner_runtime.cli.ray_option import RAY_HELP, RAY_HOSTS_HELP, check_ray_options, ray_farm
from planner_runtime.cli.simulator_option import SIMULATOR_HELP, llm_simulator, simulator_address
from planner_runtime.config import Settings
from planner_runtime.errors import ConfigError, PlannerRuntimeError


def collect(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids (repeat the option)."),
    split: Optional[str] = typer.Option(None, "--split", help="Only the train or the test split."),
    devices: int = typer.Option(4, "--devices", "-n", min=1, help="Episodes in parallel (and virtual phones, without --adb/--appium)."),
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="Use the phones of this adb server (repeat for several); needs --allow-reset."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="local, scripted, demo (each task's reference solution; repeat k draws random parameters with seed k) or openai://host:port/model."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: a model path."),
    release: Optional[str] = typer.Option(None, "--release", help=RELEASE_HELP),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: JSON {task id: [calls]}."),
    repeat: Optional[int] = typer.Option(None, "--repeat", "-k", min=1, help="Episodes per task (default 1; on --resume it may grow)."),
    distinct: Optional[bool] = typer.Option(None, "--distinct", help="With -k: a task without random parameters runs once (its demo would only repeat itself); a template with random parameters still gets k seeds."),
    per_template: Optional[int] = typer.Option(None, "--per-template", min=1, help="Only the first N tasks of each task template, as the suite lists them."),
    detours: Optional[bool] = typer.Option(None, "--detours", help="With --planner demo: each demo opens with the wrong guess a planner makes when it skips a lookup (an id taken from the goal), which the tool refuses; the refused turn is context, never a training target, so recovery is learnt. Tasks whose demo looks nothing up are left out."),
    resume: Optional[str] = typer.Option(None, "--resume", help="A collection id to continue with what it was started with (finished items are skipped)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The device pool's lock and fault records."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for the episodes (allow: [purchase, pay, ...]); deny by default."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Step limit of every episode (default: each task's own)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, max=2.0,
                                                help="Sample the planner at this temperature, each repeat with its own seeds "
                                                     "(rejection sampling: keep the verified episodes; default 0, greedy)."),
    planner_timeout: Optional[float] = typer.Option(None, "--planner-timeout", min=0.1, help="Seconds to wait for an openai:// planner's answer."),
    first_seed: Optional[int] = typer.Option(None, "--first-seed", min=0, help="Repeat k of a template with random parameters runs its seed FIRST_SEED + k (default 0: seeds 0, 1, ...); fresh seeds make instances never trained on."),
    allow_reset: bool = typer.Option(False, "--allow-reset", help="Let task setup wipe app data on phones that are not virtual or disposable."),
    simulator: Optional[str] = typer.Option(None, "--simulator", help=SIMULATOR_HELP),
    ray: Optional[str] = typer.Option(None, "--ray", help=RAY_HELP),
    ray_hosts: Optional[int] = typer.Option(None, "--ray-hosts", min=1, help=RAY_HOSTS_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON on stdout (progress goes to stderr)."),
) -> None:
    """Run a suite's tasks K times each over N devices in parallel; infra failures retried elsewhere.

    Exit status: 0 when every item ran to a verdict (failed verdicts are results, not a failed
    job), 3 when items stayed infra faults after their retries, 2 for a usage error, 130 on Ctrl-C
    (running episodes are stored as interrupted at once and end at their next turn; the
    collection id and the command that resumes it are printed).

    With --ray, each device host of the Ray cluster runs -n episodes at once on its own phones
    (virtual ones, or those of --adb as that host reaches it) with its own planner; the store
    stays here. A host lost mid-collection has its running items run again on the others; with
    every host lost the collection stops with status 3, its finished items kept.

    --planner demo plays each task's demo on virtual phones, sensitive actions allowed unless
    --policy says otherwise; a demo its verifier fails is named on stderr, and its trajectory,
    a failed one, stays out of training data (`tasks demos` exits 1 for it).
    """
    from device_farm.errors import DeviceError
    from planner_runtime.runs.collect import CollectionStopped, check_reset, ready_check
    from planner_runtime.runs.collect import collect as run_collection
    from planner_runtime.contract import new_id
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.trajectories.store import TrajectoryStore

    coll = resume or new_id("coll_")
    again = resume_command(coll, store=store, adb=adb, devices=devices, state_dir=state_dir, allow_reset=allow_reset,
                           planner_timeout=planner_timeout, ray=ray, ray_hosts=ray_hosts)
    try:
        check_ray_options(ray, ray_hosts)
        settings = Settings.from_env()
        options = dict(suite=suite, tasks=task, split=split, repeat=repeat, distinct=distinct, per_template=per_template, detours=detours, planner=planner, model=model_option(model, release, None if resume else planner or settings.planner), script=script,
                       policy=_policy(policy, None if resume or adb else planner or settings.planner), max_steps=max_steps,
                       temperature=temperature, first_seed=first_seed, simulator=simulator_address(simulator))
        path = store or settings.store_path
        with ExitStack() as stack:
            # everything that can refuse is checked before a new store is created
            db = None if resume is None else stack.enter_context(TrajectoryStore(path, create=False))
            spec = _spec(db, resume, path, options, planner or settings.planner)
            if spec.detours and adb:  # a wrong guess accepted on a real phone could act on the user's own data
                raise fail("--detours makes wrong calls on purpose: virtual phones only (leave out --adb)")
            tasks = _tasks(spec)
            so_far = _episodes_so_far(db, coll)
            planner_for = _planners(spec, planner_timeout, so_far)  # with --ray too: its options are checked here
            disposable = disposable_serials(settings)
            if ray is not None:  # each host builds and checks its own pool once started, after the store is opened
                farm = stack.enter_context(ray_farm(ray, ray_hosts, adb, devices, state_dir))
                db = db or stack.enter_context(TrajectoryStore(path, create=True))
                db.record_collection(coll, spec.model_dump(mode="json"))
                counts = _run_on_ray(tasks, spec, coll=coll, farm=farm, db=db, timeout=planner_timeout,
                                     so_far=so_far, allow_reset=allow_reset, disposable=disposable)
            else:
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
        from planner_runtime.runs.distributed import HostsLost  # Ray itself is imported only with --ray

        raise fail(str(exc), ExitCode.infra if isinstance(exc, HostsLost) else ExitCode.failed) from exc
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if spec.planner == "demo":
        _report_failed_demos(path, coll, "detour demo" if spec.detours else "demo")
    report = {"collection": coll, "total": counts.total, "succeeded": counts.success, "failed": counts.failed,
              "infra_retried": counts.infra, "skipped": counts.skipped, "gave_up": counts.gave_up,
              **({"hosts": counts.hosts} if ray is not None else {})}
    if as_json:
        print(json.dumps(report))
    else:
        console.print(
            f"collection {coll}: {counts.success} succeeded, {counts.failed} failed, {counts.infra} infra episodes retried, "
            f"{counts.skipped} skipped (done before), {len(counts.gave_up)} given up"
        )
        if counts.hosts:
            console.print("items settled per host: " + ", ".join(f"{host} {n}" for host, n in counts.hosts.items()),
                          soft_wrap=True, markup=False)
    if counts.gave_up:
        err.print("given up after repeated infra failures (not counted against the planner): " + ", ".join(counts.gave_up)
                  + f"\nrun them again with\n  {again}", soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.infra)


def _report_failed_demos(path: Path, coll: str, kind: str = "demo") -> None:
    """One line per demo its task's verifier failed, kept out of training data: a broken reference
    solution, or (a ``detour demo``) a wrong guess that did harm or was accepted."""
    from planner_runtime.runs.demos import failed_demos
    from planner_runtime.trajectories.store import TrajectoryStore

    with TrajectoryStore(path, create=False) as db:
        for failure in failed_demos(db, coll):
            err.print(f"{kind} of {failure.task_id} fails its verifier ({failure.reason}); trajectory {failure.trajectory_id} "
                      "stays out of training data", soft_wrap=True, markup=False)


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


@contextmanager
def _bar(total: int):  # noqa: ANN202 - yields (the rich Progress, its update for collect.Progress counts)
    """A live progress bar on stderr for a collection of ``total`` items."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        row = bar.add_task("collecting", total=total)

        def show(p) -> None:  # noqa: ANN001 - collect.Progress
            bar.update(row, completed=p.done + p.skipped,
                       description=f"[green]{p.success} ok[/green] [red]{p.failed} failed[/red] [yellow]{p.infra} infra[/yellow]")

        yield bar, show


def _run(run_collection, tasks, spec, *, coll, pool, db, planner_for, workers, allow_reset, disposable):  # noqa: ANN001, ANN202
    """The collection with a live progress bar on stderr."""
    from planner_runtime.runs.attempt import items_of

    with _bar(len(items_of(tasks, spec.repeat, spec.distinct))) as (bar, show):
        def stopping(ids: list[str]) -> None:
            bar.stop()
            err.print(f"stopping: {len(ids)} running episode{'' if len(ids) == 1 else 's'} stored as interrupted; "
                      "waiting for the current steps to end (Ctrl-C again to quit at once)", soft_wrap=True, markup=False)

        _, counts = run_collection(tasks, pool=pool, store=db, planner_for=planner_for, workers=workers, repeat=spec.repeat,
                                   first_seed=spec.first_seed, distinct=spec.distinct,
                                   collection=coll, on_change=show, policy=spec.policy, max_steps=spec.max_steps,
                                   allow_reset=allow_reset, disposable=disposable, on_interrupt=stopping,
                                   simulator=llm_simulator(spec.simulator))
    return counts


def _run_on_ray(tasks, spec, *, coll, farm, db, timeout, so_far, allow_reset, disposable):  # noqa: ANN001, ANN202
    """The collection on the device hosts of ``farm``, with a live progress bar on stderr."""
    import functools

    from planner_runtime.runs.attempt import items_of
    from planner_runtime.runs.distributed import collect_on_ray

    def warn(line: str) -> None:
        err.print(f"warning: {line}", soft_wrap=True, markup=False)

    with _bar(len(items_of(tasks, spec.repeat, spec.distinct))) as (_, show):
        _, counts = collect_on_ray(tasks, farm=farm, store=db, planners=functools.partial(host_planners, spec, timeout, so_far),
                                   repeat=spec.repeat, first_seed=spec.first_seed, distinct=spec.distinct, collection=coll,
                                   on_change=show, on_warning=warn, policy=spec.policy, max_steps=spec.max_steps, allow_reset=allow_reset,
                                   disposable=disposable, simulator=llm_simulator(spec.simulator))
    return counts


def resume_command(coll: str, *, store: Path | None, adb: list[str] | None, devices: int, state_dir: Path | None,
                   allow_reset: bool, planner_timeout: float | None, ray: str | None = None, ray_hosts: int | None = None) -> str:
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
    words += ["--ray", ray] if ray else []
    words += ["--ray-hosts", str(ray_hosts)] if ray_hosts else []
    return shlex.join(words)


def _policy(path: Path | None, planner: str | None):  # noqa: ANN202 - a Policy, or None when not given
    """The --policy file's. A new demo collection on virtual phones (``planner``; None on resume,
    which keeps the recorded policy, and on real phones, where a sent message is sent) may take
    every sensitive action its tasks ask for unless a file says otherwise: a demo is the task's
    own solution, played on a sandbox phone."""
    from planner_runtime.harness.safety import Policy

    if path is None and planner == "demo":
        from planner_runtime.runs.demos import DEMO_POLICY

        return DEMO_POLICY
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
    if spec.per_template:
        taken: dict[str, int] = {}
        kept = []
        for t in tasks:
            taken[t.template] = taken.get(t.template, 0) + 1
            if taken[t.template] <= spec.per_template:
                kept.append(t)
        tasks = kept
    if not tasks:
        raise fail("no task matches --task and --split")
    if spec.planner == "demo":
        bare = [t.id for t in tasks if not t.demo]
        if bare:
            err.print(f"warning: --planner demo: {len(bare)} tasks have no demo and are left out ({', '.join(bare[:3])}"
                      f"{', ...' if len(bare) > 3 else ''})", soft_wrap=True, markup=False)
        tasks = [t for t in tasks if t.demo]
        if not tasks:
            raise fail("--planner demo: none of the chosen tasks has a demo")
    if spec.detours:
        from planner_runtime.runs.demos import task_detour

        if spec.planner != "demo":
            raise fail("--detours opens each task's demo with a wrong guess: give --planner demo")
        tasks = [t for t in tasks if task_detour(t) is not None]
        if not tasks:
            raise fail("--detours: no chosen task's demo looks a value up, so none has a wrong guess to recover from")
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


def _episodes_so_far(db, coll: str) -> dict[str, int]:  # noqa: ANN001 - a TrajectoryStore or None
    """How many episodes each task has in ``coll`` already (none for a new collection)."""
    from collections import Counter

    from planner_runtime.trajectories.store import Filter

    return {} if db is None else dict(Counter(s.task_id for s in db.query(Filter(collection=coll)) if s.task_id))


def _planners(spec, timeout: float | None, so_far: dict[str, int] | None = None,  # noqa: ANN001, ANN202 - CollectionSpec -> (TaskSpec -> Planner)
              share: tuple[int, int] = (0, 1)):
    """One planner per episode for scripted runs (each task's own calls), else one shared by every
    worker; sampled at a temperature, each episode gets seeds after the ``so_far`` ones of its task
    (on device host i of n, ``share`` (i, n): every n-th of them, so no two hosts sample alike)."""
    from planner_runtime.runs.collect import shared
    from planner_runtime.planners.scripted import ScriptedPlanner

    if spec.temperature > 0 and spec.planner in ("demo", "scripted"):
        raise ConfigError(f"--temperature samples a model; --planner {spec.planner} plays fixed calls")
    if spec.planner == "demo":
        from planner_runtime.runs.demos import demo_planner, detour_planner

        return detour_planner if spec.detours else demo_planner  # each task drawn: its demo takes the random values drawn for it
    if spec.planner == "scripted":
        if not spec.script:
            raise ConfigError("--planner scripted needs --script FILE (JSON {task id: [calls]})")
        scripts = _scripts(Path(spec.script), spec.script_text)
        return lambda t: ScriptedPlanner(scripts.get(t.id, []))
    model = make_planner(spec.planner, spec.model, None, **planner_timeout_option(timeout))
    one = shared(model)
    if spec.temperature > 0:
        from planner_runtime.planners import Sampling
        from planner_runtime.planners.sampled import EpisodeSeeds, SampledPlanner

        seeds, budget = EpisodeSeeds(so_far or {}, share), getattr(model, "max_new_tokens", Sampling().max_new_tokens)
        return lambda t: SampledPlanner(one, temperature=spec.temperature, seeds=seeds, key=t.id, max_new_tokens=budget)
    return lambda t: one




def host_planners(spec, timeout: float | None, so_far: dict[str, int], index: int, hosts: int):  # noqa: ANN001, ANN201 - CollectionSpec -> (TaskSpec -> Planner)
    """The collection's planners as device host ``index`` of ``hosts`` builds them (see
    :func:`_planners`); bound to a spec with :func:`functools.partial`, it travels to the hosts."""
    return _planners(spec, timeout, so_far, share=(index, hosts))


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
