"""The ``planner-agent`` command line: run an assistant, serve a virtual phone, list tasks.

Verbs a user guesses: ``run``, ``phone serve``, ``tasks list|check``, ``show``. Anything slow
shows progress; ``--json`` gives machine-readable output for scripts.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from planner_runtime.config import Settings, parse_host_port
from planner_runtime.contract import Step, Trajectory
from planner_runtime.errors import PlannerRuntimeError

app = typer.Typer(help="Android device-farm agent runtime: a frozen planner drives tool calls on phones.", no_args_is_help=True)
phone_app = typer.Typer(help="The built-in virtual phone.", no_args_is_help=True)
tasks_app = typer.Typer(help="Task specs and suites.", no_args_is_help=True)
app.add_typer(phone_app, name="phone")
app.add_typer(tasks_app, name="tasks")
skills_app = typer.Typer(help="Skills: how to use the tools (skills/<name>/SKILL.md).", no_args_is_help=True)
app.add_typer(skills_app, name="skills")
export_app = typer.Typer(help="Export trajectories for training.", no_args_is_help=True)
app.add_typer(export_app, name="export")
from planner_runtime.memory_cli import memory_app, run_memory  # noqa: E402 - the memory sub-app

app.add_typer(memory_app, name="memory")
from planner_runtime.viewer.cli import view  # noqa: E402 - planner-agent view

app.command()(view)
from planner_runtime.trajectories_cli import trajectories_app  # noqa: E402 - planner-agent trajectories

app.add_typer(trajectories_app, name="trajectories")

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def _screen_summary(step: Step) -> str:
    """One line about the screen after the step: its app and how many elements it shows."""
    obs = step.feedback.observation
    if obs is None:
        return "screen not read"
    lines = obs.screen.splitlines()
    count = sum(1 for line in lines if line.startswith("["))
    more = next((int(line.split()[1]) for line in lines if line.startswith("... ") and line.split()[1].isdigit()), 0)
    shot = "  (screenshot)" if obs.screenshot else ""
    return f"screen: {obs.package or '?'} · {count + more} elements{shot}"


def _print_step(step: Step, depth: int = 0) -> None:
    """A step as the live view and `show` print it; a sub-agent's steps are indented (``depth``)."""
    fb = step.feedback
    call = step.tool_call
    what = f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}" if call else f"(no call) {step.raw_output[:80]!r}"
    if fb.error is not None:
        outcome = f"[red]{fb.status.value}[/red] {fb.error.code.value}: {fb.error.hint}"
    else:
        shown = json.dumps(fb.result, ensure_ascii=False) if fb.result is not None else ""
        outcome = f"[green]{fb.status.value}[/green] {shown[:120]}"
    pad = "    │ " * depth
    label = "sub-step" if depth else "step"
    note = f"\n{pad}        [yellow]{fb.note}[/yellow]" if fb.note else ""
    console.print(
        f"{pad}[bold]{label} {step.index + 1}[/bold]  {what}\n{pad}        → {outcome}  "
        f"[dim]({step.plan_seconds:.2f}s plan, {step.act_seconds:.2f}s act)[/dim]{note}\n{pad}        [dim]{_screen_summary(step)}[/dim]",
        markup=True,
    )


def _print_child_step(step: Step) -> None:
    """The live view of a sub-agent at work (its delegate step is printed when it returns)."""
    if step.index == 0:
        console.print("    ┌ [bold]sub-agent[/bold] working")
    _print_step(step, 1)


def _ask_user(question: str) -> str:
    return typer.prompt(f"The assistant asks: {question}", err=True)


def _answerer(answers: Path | None):  # noqa: ANN202 - an Answerer, or None when nobody can answer
    """A file of answers (question pattern → answer) first; then the person, when at a terminal."""
    import sys

    from planner_runtime.harness.tools.user import ScriptedAnswers, chain

    return chain(ScriptedAnswers.load(answers) if answers else None, _ask_user if sys.stdin.isatty() else None)


def _print_summary(traj: Trajectory) -> None:
    console.print(f"\n[bold]status:[/bold] {traj.status.value}   [bold]answer:[/bold] {traj.answer or '-'}")
    if traj.verdict is not None:
        v = traj.verdict
        label = "[green]success[/green]" if v.success else f"[red]failed[/red] ({v.failure_kind.value if v.failure_kind else '?'})"
        console.print(f"[bold]verdict:[/bold] {label}  score {v.score:.2f}")
        for check in v.checks:
            mark = "[green]✓[/green]" if check.passed else "[red]✗[/red]"
            console.print(f"  {mark} {check.name} — {check.evidence}")
    else:
        console.print("[bold]verdict:[/bold] none (the goal is not a task with completion criteria; use --task)")
    console.print(f"[bold]trajectory:[/bold] {traj.id}  ({len(traj.steps)} steps, {traj.usage.prompt_tokens} prompt + {traj.usage.completion_tokens} output tokens)")


def _make_planner(backend: str, model: str | None, script: Path | None):  # noqa: ANN202 - a Planner
    from planner_runtime import planners

    kwargs: dict = {}
    if backend == "local" and model:
        kwargs["model"] = model
    if backend == "scripted":
        kwargs["script"] = json.loads(script.read_text()) if script else []
    return planners.create(backend, **kwargs)


def _ask(tool: str, category, arguments: dict) -> bool:  # noqa: ANN001 - Sensitivity
    shown = json.dumps(arguments, ensure_ascii=False)
    return typer.confirm(f"The assistant wants to {category.value}: {tool} {shown}. Allow?", default=False, err=True)


def _safety_gate(policy: Path | None):  # noqa: ANN202 - SafetyGate
    """Policy from a file (deny by default); a y/n prompt for the rest when a person is at the terminal."""
    import sys

    from planner_runtime.harness.safety import Policy, SafetyGate

    rules = Policy.load(policy) if policy else Policy()
    return SafetyGate(policy=rules, confirm=_ask if sys.stdin.isatty() else None)


@app.command()
def run(
    goal: Optional[str] = typer.Argument(None, help="What to do, e.g. 'Set an alarm for 7:30'."),
    task: Optional[str] = typer.Option(None, "--task", help="Run a task from the built-in suite by id (seeds and verifies)."),
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Drive this attached phone."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="Planner backend: local, scripted, or openai://host:port/model (openai+https://... for TLS)."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: an HF model dir, .safetensors or .gguf file."),
    script: Optional[Path] = typer.Option(None, "--script", help="For --planner scripted: a JSON list of tool calls."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token limit (prompt + output, all turns)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the trajectory as JSON at the end."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy (allow: [send, call, ...]); without a terminal, sensitive actions are denied unless it allows them."),
    seed: int = typer.Option(0, "--seed", help="With --task: the seed its random parameters are drawn with."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Memory profile to recall from and write to (default: 'default'; a task run without it gets a scratch memory)."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Do not read or write the memory profile."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="YAML of question pattern (regex) → answer for ask_user; without a terminal and without it, no user is available."),
) -> None:
    """Run the assistant on a phone (the built-in virtual phone when none is attached)."""
    from planner_runtime.runner import open_device, run_goal
    from planner_runtime.tasks.spec import builtin_suite, find_task, load_suite
    from planner_runtime.trajectories import TrajectoryStore

    settings = Settings.from_env()
    try:
        tasks = load_suite(suite) if suite else builtin_suite()
        spec = None
        if task is not None:
            spec = find_task(task, tasks).draw(seed)
        elif goal is not None:  # a goal that is exactly a known task's goal gets that task's checks
            spec = next((t for t in tasks.tasks if t.rendered_goal().lower() == goal.strip().lower()), None)
        if goal is None and spec is None:
            raise _fail("give a goal or --task")
        goal_text = goal or spec.rendered_goal()  # type: ignore[union-attr]
        brain = _make_planner(planner or settings.planner, model, script)
        host, port = parse_host_port(adb or settings.adb)
        with TrajectoryStore(store or settings.store_path) as db, run_memory(settings.home, profile, no_memory, spec is not None) as memory:
            with open_device(serial, host, port, say=lambda m: err.print(f"[yellow]{m}[/yellow]")) as (device, ref, source):
                console.print(f"[bold]goal:[/bold] {goal_text}   [dim]device {ref.serial} ({ref.model}), planner {brain.name}[/dim]")
                traj = run_goal(
                    goal_text,
                    device=device,
                    device_ref=ref,
                    source=source,
                    planner=brain,
                    store=db,
                    task=spec,
                    max_steps=max_steps or (None if spec else settings.max_steps),
                    on_step=_print_step,
                    gate=_safety_gate(policy),
                    memory=memory,
                    ask=_answerer(answers),
                    max_tokens=max_tokens,
                    on_child_step=_print_child_step,
                )
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    except Exception as exc:  # device errors and the like: say what failed, no traceback wall
        from device_farm.errors import DeviceError

        if isinstance(exc, DeviceError):
            raise _fail(f"device: {exc}", 3) from exc
        raise
    _print_summary(traj)
    if as_json:
        print(traj.to_json())


@app.command()
def show(
    trajectory_id: str = typer.Argument(..., help="A trajectory id printed by `run`."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show a stored trajectory step by step."""
    from planner_runtime.trajectories import TrajectoryStore

    try:
        with TrajectoryStore(store or Settings.from_env().store_path) as db:
            traj = db.get(trajectory_id)
            children = {ref: db.get(ref) for ref in db.children(traj.id)}
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(traj.to_json())
        return
    if traj.parent:
        console.print(f"[dim]a sub-agent's episode, delegated by {traj.parent}[/dim]")
    console.print(f"[bold]goal:[/bold] {traj.goal}  [dim]task {traj.task_id or '-'}, planner {traj.planner_release}, {traj.source.value}[/dim]")
    for step in traj.steps:
        _print_step(step)
        result = step.feedback.result
        child = children.get(result.get("trajectory", "")) if isinstance(result, dict) else None
        if child is not None:  # the delegate step: the sub-agent's own steps, nested under it
            console.print(f"    │ [bold]sub-agent[/bold] {child.id}: {child.goal}")
            for sub in child.steps:
                _print_step(sub, 1)
            console.print(f"    └ {child.status.value}, answer: {child.answer or '-'}")
    _print_summary(traj)


@app.command()
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
            raise _fail(f"device: {exc}", 3) from exc
        raise
    if as_json:
        print(json.dumps(devices_json(rows, pool.source_errors, pool.sources), indent=2))
        return
    for name, problem in pool.source_errors.items():
        err.print(f"[yellow]{name}: {problem}[/yellow]")
    console.print(devices_table(rows) if rows else "no devices")


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8000, "--port", help="TCP port of the OpenAI-compatible API."),
    model: Optional[str] = typer.Option(None, "--model", help="An HF model dir, .safetensors or .gguf file (default: the embedded planner)."),
    name: Optional[str] = typer.Option(None, "--name", help="The model id clients ask for (default: the model's label)."),
    max_batch: int = typer.Option(8, "--max-batch", help="Most requests decoded together."),
) -> None:
    """Serve the local planner as an OpenAI-compatible API (/v1/chat/completions with tools)."""
    import threading

    from planner_runtime.planners.local import LocalPlanner
    from planner_runtime.serving.server import PlannerServer

    server = PlannerServer(LocalPlanner(model), model_name=name, host=host, port=port, max_batch=max_batch)
    try:
        with console.status("loading the planner model"):
            server.start()
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    except OSError as exc:
        raise _fail(f"cannot listen on {host}:{port}: {exc}") from exc
    err.print(f"serving model {server.model_name!r} at {server.base_url} (try --planner openai://{host}:{server.port}/{server.model_name})", soft_wrap=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@app.command()
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
                raise _fail(f"no task {sorted(unknown)[0]!r}; see `planner-agent tasks list`")
            tasks = [t for t in tasks if t.id in task]
        if split:
            tasks = [t for t in tasks if t.split_name == split]
        backend = planner or settings.planner
        if backend == "scripted":
            scripts = json.loads(script.read_text()) if script else {}
            planner_for = lambda t: ScriptedPlanner(scripts.get(t.id, []))  # noqa: E731
        else:
            one = shared(_make_planner(backend, model, None))
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
        raise _fail(str(exc)) from exc
    console.print(
        f"collection {coll}: {counts.success} succeeded, {counts.failed} failed, {counts.infra} infra episodes retried, "
        f"{counts.skipped} skipped (done before), {len(counts.gave_up)} given up"
    )
    if counts.gave_up:
        console.print("given up after repeated infra failures: " + ", ".join(counts.gave_up))


@app.command()
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
                raise _fail("give a trajectory id or --failed")
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
                    brain = _make_planner(planner or settings.planner, model, script)
                    new = replan(traj, from_step, planner=brain, device=device, device_ref=ref, store=db,
                                 task=task, source=source, on_step=_print_step)
                    old_v = traj.verdict.success if traj.verdict else None
                    new_v = new.verdict.success if new.verdict else None
                    console.print(f"recorded verdict: {old_v}  re-planned from step {from_step + 1} with {brain.name}: {new_v}  → {new.id}")
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc


@phone_app.command("serve")
def phone_serve(
    port: int = typer.Option(5555, "--port", help="TCP port for the adb transport (5555-5585 are auto-attached by adb)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
) -> None:
    """Serve the built-in virtual phone until Ctrl-C; then `adb connect 127.0.0.1:PORT`."""
    from device_farm.virtual import VirtualPhone

    import threading

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    phone = VirtualPhone(port=port, host=host)
    try:
        phone.start()  # returns once listening, so the line below is true when printed
    except OSError as exc:
        raise _fail(f"cannot listen on {host}:{port}: {exc}") from exc
    err.print(f"virtual phone {phone.serial} listening on {host}:{phone.port}; connect with: adb connect {host}:{phone.port}", soft_wrap=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        phone.stop()


@tasks_app.command("list")
def tasks_list(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    as_json: bool = typer.Option(False, "--json"),
    split: Optional[str] = typer.Option(None, "--split", help="Only the train or the test split (split by template)."),
) -> None:
    """List the tasks of a suite."""
    from planner_runtime.tasks.spec import builtin_suite, load_suite

    try:
        tasks = load_suite(suite) if suite else builtin_suite()
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps([t.model_dump(mode="json") | {"split": t.split_name, "template": t.template}
                          for t in tasks.tasks if split is None or t.split_name == split], indent=2))
        return
    for t in tasks.tasks:
        if split is None or t.split_name == split:
            console.print(f"[bold]{t.id}[/bold]  [dim]{t.category.value}/{t.domain}/{t.difficulty}/{t.split_name}[/dim]  {t.rendered_goal()}")


@tasks_app.command("audit")
def tasks_audit(
    suite: Optional[Path] = typer.Option(None, "--suite", help="A suite YAML file (default: built-in)."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Audit on this attached phone."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
) -> None:
    """Run a do-nothing planner on every task; flag tasks that pass without acting (exit 1 if any)."""
    from functools import partial

    from planner_runtime.runner import open_device
    from planner_runtime.tasks.audit import audit
    from planner_runtime.tasks.spec import builtin_suite, load_suite
    from planner_runtime.trajectories import TrajectoryStore

    settings = Settings.from_env()
    host, port = parse_host_port(adb or settings.adb)
    try:
        tasks = load_suite(suite) if suite else builtin_suite()
        with TrajectoryStore(store or settings.store_path) as db:
            results = audit(tasks.tasks, partial(open_device, serial, host, port, say=lambda m: None), db)
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    flagged = [r for r in results if r.passes_without_acting]
    for r in results:
        mark = "[red]PASSES WITHOUT ACTING[/red]" if r.passes_without_acting else "[green]ok[/green]"
        console.print(f"{r.task_id}  {mark}  score {r.verdict.score:.2f}")
    console.print(f"{len(results)} tasks audited, {len(flagged)} flagged")
    if flagged:
        raise typer.Exit(1)


@tasks_app.command("check")
def tasks_check(path: Path = typer.Argument(..., help="A suite YAML file to validate.")) -> None:
    """Validate a suite file; errors name the line and field."""
    from planner_runtime.tasks.spec import load_suite

    try:
        tasks = load_suite(path)
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc
    console.print(f"{path}: {len(tasks.tasks)} tasks OK")


def _load_skills(directory: Optional[Path]):  # noqa: ANN202 - list[Skill]
    from planner_runtime.harness.skills import load_skills

    try:
        return load_skills(directory)
    except PlannerRuntimeError as exc:
        raise _fail(str(exc)) from exc


_SKILLS_DIR = typer.Option(None, "--dir", help="Skills folder (default: $PLANNER_AGENT_SKILLS_DIR or the built-in one).")


@skills_app.command("list")
def skills_list(directory: Optional[Path] = _SKILLS_DIR, as_json: bool = typer.Option(False, "--json")) -> None:
    """List the skills with their apps, tools and composite."""
    skills = _load_skills(directory)
    if as_json:
        print(json.dumps([s.model_dump(mode="json", exclude={"body"}) for s in skills], indent=2))
        return
    for s in skills:
        extra = f"  [dim]one call: {s.tool_name}[/dim]" if s.composite else ""
        console.print(f"[bold]{s.name}[/bold]  [dim]{', '.join(s.apps) or '-'} | {', '.join(s.tools)}[/dim]  {s.description}{extra}")


@skills_app.command("show")
def skills_show(name: str = typer.Argument(...), directory: Optional[Path] = _SKILLS_DIR) -> None:
    """Show one skill as the planner reads it."""
    skill = next((s for s in _load_skills(directory) if s.name == name), None)
    if skill is None:
        raise _fail(f"no skill {name!r}; see `planner-agent skills list`")
    console.print(skill.to_prompt(full=True), markup=False)


@skills_app.command("check")
def skills_check(directory: Optional[Path] = _SKILLS_DIR) -> None:
    """Check every skill: referenced tools exist, composite placeholders are declared parameters."""
    from planner_runtime.harness.skills import check_skill
    from planner_runtime.harness.toolbox import episode_tool_names

    names = episode_tool_names()
    skills = _load_skills(directory)
    bad = 0
    for skill in skills:
        for problem in check_skill(skill, names):
            bad += 1
            err.print(f"{skill.path}: {problem}")
    if bad:
        raise typer.Exit(1)
    console.print(f"{len(skills)} skills OK")


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
        raise _fail(str(exc)) from exc
    console.print(f"{out}: {stats.rows} rows from {stats.trajectories} trajectories ({stats.masked_turns} error turns masked)")


if __name__ == "__main__":
    app()
