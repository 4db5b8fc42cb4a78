"""The ``planner-agent`` command line: run an assistant, serve a planner or a virtual phone.

Verbs a user guesses: ``run``, ``show`` and ``serve`` here; ``collect``, ``replay``,
``devices``, ``export``, ``phone``, ``memory``, ``trajectories`` and ``view`` in a module each
of this package; ``tasks`` and ``skills`` in :mod:`planner_runtime.cli.tasks`. Anything slow
shows progress; ``--json`` gives machine-readable output.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from planner_runtime.cli.common import (
    EXIT_CODES_HELP, ExitCode, answerer, console, episode_exit, err, fail, make_planner, print_child_step, print_step, print_summary,
    reports_to_stderr, safety_gate, serve_until_interrupted,
)
from planner_runtime.cli.analyze import analyze
from planner_runtime.cli.bench import bench
from planner_runtime.cli.collect import collect
from planner_runtime.cli.data import data_app
from planner_runtime.cli.demos import tasks_demos
from planner_runtime.cli.devices import devices
from planner_runtime.cli.export import export_app
from planner_runtime.cli.harness import harness_app
from planner_runtime.config import Settings, parse_host_port, unknown_variables
from planner_runtime.errors import ConfigError, PlannerRuntimeError
from planner_runtime.cli.memory import memory_app, run_memory
from planner_runtime.cli.phone import phone_app
from planner_runtime.cli.release_option import RELEASE_HELP, model_option, resolved_model
from planner_runtime.cli.releases import releases_app
from planner_runtime.cli.replay import replay
from planner_runtime.cli.review import review_app
from planner_runtime.cli.round import round_app
from planner_runtime.cli.tasks import skills_app, tasks_app
from planner_runtime.cli.tools import tools_app
from planner_runtime.cli.trajectories import trajectories_app
from planner_runtime.cli.train import train_app
from planner_runtime.cli.viewer import view

# Help text is shown as written: format hints such as [calls] or [send, call] are not Rich markup.
app = typer.Typer(help="Android device-farm agent runtime: a frozen planner drives tool calls on phones.", no_args_is_help=True,
                  rich_markup_mode=None, epilog=EXIT_CODES_HELP)
for sub, name in ((phone_app, "phone"), (tasks_app, "tasks"), (skills_app, "skills"), (export_app, "export"),
                  (memory_app, "memory"), (trajectories_app, "trajectories"), (train_app, "train"), (releases_app, "releases"),
                  (tools_app, "tools"), (harness_app, "harness"), (round_app, "round")):
    app.add_typer(sub, name=name)
app.add_typer(review_app, name="review")
app.add_typer(data_app, name="data")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"planner-agent {version('planner-agent')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            print("planner-agent (not installed: version unknown)")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version, help="Print the version and exit."),
) -> None:
    """Android device-farm agent runtime: a frozen planner drives tool calls on phones."""
    if "--help" in sys.argv[1:]:
        return  # help is shown even when a setting is bad
    try:  # every verb reads the settings: a bad PLANNER_AGENT_* value is one line, before anything runs
        Settings.from_env()
    except ConfigError as exc:
        raise fail(str(exc)) from exc
    for warning in unknown_variables():
        err.print(warning, markup=False, highlight=False, soft_wrap=True)


@app.command(epilog=EXIT_CODES_HELP)
def run(
    goal: Optional[str] = typer.Argument(None, help="What to do, e.g. 'Set an alarm for 7:30' (free-form: never seeded nor verified)."),
    task: Optional[str] = typer.Option(None, "--task", help="Run a task from the built-in suite by id: seeds the phone first and verifies after."),
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    serial: Optional[str] = typer.Option(None, "--serial", "-s", help="Drive this attached phone."),
    adb: Optional[str] = typer.Option(None, "--adb", help="adb server host:port to find phones on; it must be running "
                                      "(only the default, 127.0.0.1:5037, may be absent, and then the built-in virtual phone is used)."),
    virtual: bool = typer.Option(False, "--virtual", help="Use the built-in virtual phone even when a phone is attached."),
    allow_reset: bool = typer.Option(
        False, "--allow-reset", help="With --task on a phone other than the built-in virtual one: let the task's setup reset its data "
        "(e.g. delete every alarm). Phones in PLANNER_AGENT_DISPOSABLE_SERIALS need no flag."),
    planner: Optional[str] = typer.Option(None, "--planner", "-p", help="Planner backend: local, scripted, demo (with --task: its reference solution), or openai://host:port/model (openai+https://... for TLS)."),
    model: Optional[str] = typer.Option(None, "--model", help="For --planner local: an HF model dir, .safetensors or .gguf file."),
    release: Optional[str] = typer.Option(None, "--release", help=RELEASE_HELP),
    script: Optional[Path] = typer.Option(None, "--script", help='For --planner scripted: a JSON list of tool calls, [{"name": "open_app", "arguments": {"app": "Clock"}}, ...].'),
    planner_timeout: Optional[float] = typer.Option(None, "--planner-timeout", min=0.1, help="For openai planners: seconds to wait for each reply (default 60)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Step limit."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Token limit (prompt + output, all turns)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file; created if missing, in an existing folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print only the trajectory as JSON on stdout (the live view goes to stderr)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy (allow: [send, call, ...]); without a terminal, sensitive actions are denied unless it allows them."),
    seed: int = typer.Option(0, "--seed", min=0, help="With --task: the seed its random parameters are drawn with."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Memory profile to recall from and write to (default: 'default'; a task run without it, "
                                          "and a task that seeds memories always, gets a scratch memory)."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Do not read or write the memory profile."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="YAML of question pattern (regex) → answer for ask_user; without a terminal and without it, no user is available."),
    simulator: Optional[str] = typer.Option(None, "--simulator", help="With --task: an OpenAI-compatible server (http://host:port) that phrases the simulated "
                                            "services' answers; checked against their world (a contradiction leaves the episode unscored)."),
) -> None:
    """Run the assistant on a phone (the built-in virtual phone when none is attached).

    A free-form goal only runs the assistant: nothing is seeded and nothing verified. --task ID
    seeds the phone with the task's starting state and checks the result; on a phone other than
    the built-in virtual one that needs --allow-reset.
    """
    from device_farm.errors import DeviceError
    from planner_runtime.contract import new_id
    from planner_runtime.cli.simulator_option import llm_simulator, simulator_address
    from planner_runtime.runs.run import check_reset, open_device, run_goal
    from planner_runtime.tasks.seeding import seeds_memory
    from planner_runtime.tasks.spec import builtin_suite, find_task, load_suite
    from planner_runtime.trajectories.store import TrajectoryStore

    trajectory_id = new_id("traj_")
    try:
        settings = Settings.from_env()
        tasks = load_suite(suite) if suite else builtin_suite()
        spec = find_task(task, tasks).draw(seed) if task is not None else None
        if goal is None and spec is None:
            raise fail("give a goal or --task")
        if virtual and serial is not None:
            raise fail("--virtual and --serial exclude each other")
        simulator = simulator_address(simulator)
        goal_text = goal or spec.rendered_goal()  # type: ignore[union-attr]
        if store is not None and not store.parent.is_dir():
            raise fail(f"--store {store}: folder {store.parent} does not exist")
        brain = make_planner(planner or settings.planner, model_option(model, release, planner or settings.planner), script, timeout=planner_timeout, task=spec)
        host, port = parse_host_port(adb or settings.adb)
        gate, ask = safety_gate(policy), answerer(answers)
        if spec is not None and seeds_memory(spec) and profile is not None and not no_memory:
            err.print(f"[yellow]warning: task {spec.id} seeds its own memories, so it runs on a scratch memory: "
                      f"profile {escape(profile)!r} is neither read nor written[/yellow]", soft_wrap=True)
            no_memory = True
        # the phone first: a phone or adb server that is not there leaves no store nor profile behind
        with reports_to_stderr(as_json), \
                open_device(serial, host, port, say=lambda m: err.print(f"[yellow]{m}[/yellow]"), virtual=virtual,
                            named=adb is not None or settings.adb_named) as (device, identity), \
                TrajectoryStore(store or settings.store_path) as db, \
                run_memory(settings.home, profile, no_memory, spec is not None) as memory:
            if spec is not None:
                check_reset(spec, identity, allow_reset=allow_reset, disposable=settings.disposable_serials,
                            warn=lambda m: err.print(f"[yellow]{m}[/yellow]", soft_wrap=True))
            ref = identity.device
            console.print(f"[bold]goal:[/bold] {goal_text}   [dim]device {ref.serial} ({ref.model}), planner {brain.name}[/dim]")
            traj = run_goal(
                goal_text,
                device=device,
                identity=identity,
                planner=brain,
                store=db,
                task=spec,
                max_steps=max_steps or (None if spec else settings.max_steps),
                on_step=print_step,
                gate=gate,
                memory=memory,
                ask=ask,
                max_tokens=max_tokens,
                on_child_step=print_child_step,
                trajectory_id=trajectory_id,
                simulator=llm_simulator(simulator),
            )
            print_summary(traj, db.usage(traj.id))
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except DeviceError as exc:  # the phone or adb failed: say what, no traceback wall
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except KeyboardInterrupt:
        raise _interrupted(trajectory_id, store or Settings.from_env().store_path) from None
    if as_json:
        print(traj.to_json())
    code = episode_exit(traj)
    if code is not ExitCode.ok:
        raise typer.Exit(code)


def _interrupted(trajectory_id: str, store: Path) -> typer.Exit:
    """Ctrl-C during ``run``: name the trajectory kept so far (the episode marked it interrupted)."""
    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        with TrajectoryStore(store, create=False) as db:
            db.get(trajectory_id)
        err.print(f"interrupted: trajectory {trajectory_id} is kept as interrupted (planner-agent show {trajectory_id})", soft_wrap=True)
    except PlannerRuntimeError:
        err.print("interrupted before the episode started: nothing was stored")
    return typer.Exit(ExitCode.interrupted)


@app.command()
def show(
    trajectory_id: str = typer.Argument(..., help="A trajectory id printed by `run`."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    as_json: bool = typer.Option(False, "--json", help="Print only the trajectory as JSON."),
) -> None:
    """Show a stored trajectory step by step; its tokens include its sub-agents', shown apart."""
    import json

    from planner_runtime.trajectories.store import TrajectoryStore

    try:
        with TrajectoryStore(store or Settings.from_env().store_path, create=False) as db:
            traj = db.get(trajectory_id)
            children = {ref: (db.get(ref), db.usage(ref)) for ref in db.children(traj.id)}
            tokens = db.usage(traj.id)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:  # the trajectory as stored ("usage": its own turns) and "tokens": own, sub-agents, total
        print(json.dumps({**traj.model_dump(mode="json"), "tokens": {**tokens.model_dump(), "total": tokens.total.model_dump()}}))
        return
    if traj.parent:
        console.print(f"[dim]a sub-agent's episode, delegated by {traj.parent}[/dim]")
    console.print(f"[bold]goal:[/bold] {traj.goal}  [dim]task {traj.task_id or '-'}, planner {traj.planner_release}, {traj.source.value}[/dim]")
    for step in traj.steps:
        print_step(step)
        result = step.feedback.result
        child, spent = children.get(result.get("trajectory", ""), (None, None)) if isinstance(result, dict) else (None, None)
        if child is not None:  # the delegate step: the sub-agent's own steps, nested under it
            console.print(f"    │ [bold]sub-agent[/bold] {child.id}: {child.goal}")
            for sub in child.steps:
                print_step(sub, 1)
            console.print(f"    └ {child.status.value}, answer: {child.answer or '-'}, {spent.split()}")
    print_summary(traj, tokens)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port of the OpenAI-compatible API (0: any free port)."),
    model: Optional[str] = typer.Option(None, "--model", help="An HF model dir, .safetensors or .gguf file (default: the embedded planner)."),
    release: Optional[str] = typer.Option(None, "--release", help=RELEASE_HELP),
    name: Optional[str] = typer.Option(None, "--name", help="A model id clients may ask for besides `planner` (default: the model's label)."),
    max_batch: int = typer.Option(8, "--max-batch", min=1, help="Most requests decoded together."),
) -> None:
    """Serve the local planner as an OpenAI-compatible API (/v1/chat/completions with tools and streaming)."""
    from planner_runtime.planners.local.planner import LocalPlanner
    from planner_runtime.serving.server import ALIAS, PlannerServer

    try:
        server = PlannerServer(LocalPlanner(resolved_model(model_option(model, release))), model_name=name, host=host, port=port, max_batch=max_batch)
        with console.status("loading the planner model"):
            server.start()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}") from exc
    names = " or ".join(repr(m) for m in server.model_ids)
    err.print(f"serving model {names} at {server.base_url} (try --planner openai://{host}:{server.port}/{ALIAS})", soft_wrap=True, markup=False)
    serve_until_interrupted(server.stop)




for verb in (devices, collect, bench, replay, view):  # after run, show and serve in --help
    app.command()(verb)
tasks_app.command("demos")(tasks_demos)
app.command()(analyze)


if __name__ == "__main__":
    app()
