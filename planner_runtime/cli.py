"""The ``planner-agent`` command line: run an assistant, serve a planner or a virtual phone.

Verbs a user guesses: ``run``, ``show``, ``serve``, ``phone serve`` here; ``collect``,
``replay``, ``devices`` and ``export`` in :mod:`planner_runtime.collect_cli`; ``tasks`` and
``skills`` in :mod:`planner_runtime.tasks_cli`; ``memory``, ``trajectories`` and ``view`` in
their own modules. Anything slow shows progress; ``--json`` gives machine-readable output.
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli_common import ExitCode, answerer, console, err, fail, make_planner, print_child_step, print_step, print_summary, safety_gate
from planner_runtime.collect_cli import collect, devices, export_app, replay
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.memory_cli import memory_app, run_memory
from planner_runtime.tasks_cli import skills_app, tasks_app
from planner_runtime.trajectories_cli import trajectories_app
from planner_runtime.viewer.cli import view

app = typer.Typer(help="Android device-farm agent runtime: a frozen planner drives tool calls on phones.", no_args_is_help=True)
phone_app = typer.Typer(help="The built-in virtual phone.", no_args_is_help=True)
for sub, name in ((phone_app, "phone"), (tasks_app, "tasks"), (skills_app, "skills"), (export_app, "export"),
                  (memory_app, "memory"), (trajectories_app, "trajectories")):
    app.add_typer(sub, name=name)


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
            raise fail("give a goal or --task")
        goal_text = goal or spec.rendered_goal()  # type: ignore[union-attr]
        brain = make_planner(planner or settings.planner, model, script)
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
                    on_step=print_step,
                    gate=safety_gate(policy),
                    memory=memory,
                    ask=answerer(answers),
                    max_tokens=max_tokens,
                    on_child_step=print_child_step,
                )
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except Exception as exc:  # device errors and the like: say what failed, no traceback wall
        from device_farm.errors import DeviceError

        if isinstance(exc, DeviceError):
            raise fail(f"device: {exc}", ExitCode.infra) from exc
        raise
    print_summary(traj)
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
        raise fail(str(exc)) from exc
    if as_json:
        print(traj.to_json())
        return
    if traj.parent:
        console.print(f"[dim]a sub-agent's episode, delegated by {traj.parent}[/dim]")
    console.print(f"[bold]goal:[/bold] {traj.goal}  [dim]task {traj.task_id or '-'}, planner {traj.planner_release}, {traj.source.value}[/dim]")
    for step in traj.steps:
        print_step(step)
        result = step.feedback.result
        child = children.get(result.get("trajectory", "")) if isinstance(result, dict) else None
        if child is not None:  # the delegate step: the sub-agent's own steps, nested under it
            console.print(f"    │ [bold]sub-agent[/bold] {child.id}: {child.goal}")
            for sub in child.steps:
                print_step(sub, 1)
            console.print(f"    └ {child.status.value}, answer: {child.answer or '-'}")
    print_summary(traj)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port of the OpenAI-compatible API (0: any free port)."),
    model: Optional[str] = typer.Option(None, "--model", help="An HF model dir, .safetensors or .gguf file (default: the embedded planner)."),
    name: Optional[str] = typer.Option(None, "--name", help="A model id clients may ask for besides `planner` (default: the model's label)."),
    max_batch: int = typer.Option(8, "--max-batch", min=1, help="Most requests decoded together."),
) -> None:
    """Serve the local planner as an OpenAI-compatible API (/v1/chat/completions with tools and streaming)."""
    import threading

    from planner_runtime.planners.local import LocalPlanner
    from planner_runtime.serving.server import ALIAS, PlannerServer

    server = PlannerServer(LocalPlanner(model), model_name=name, host=host, port=port, max_batch=max_batch)
    try:
        with console.status("loading the planner model"):
            server.start()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}") from exc
    names = " or ".join(repr(m) for m in server.model_ids)
    err.print(f"serving model {names} at {server.base_url} (try --planner openai://{host}:{server.port}/{ALIAS})", soft_wrap=True, markup=False)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@phone_app.command("serve")
def phone_serve(
    port: int = typer.Option(5555, "--port", help="TCP port for the adb transport (5555-5585 are auto-attached by adb); 0: any free port."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    count: int = typer.Option(1, "--count", "-n", min=1, max=256, help="Serve this many phones (ports PORT, PORT+1, ...)."),
    processes: int = typer.Option(1, "--processes", min=1, help="Spread the phones over this many worker processes (one core each at most)."),
    adb_keys: Optional[list[Path]] = typer.Option(
        None, "--adb-keys", exists=True, help="Require ADB authentication: trust the host keys in this adbkey.pub/adb_keys file or folder (repeat for several)."),
    accept_new_keys: bool = typer.Option(
        False, "--accept-new-keys", help="Require authentication but trust any host that offers its key, as if the user tapped Always allow."),
) -> None:
    """Serve built-in virtual phones until Ctrl-C; then `adb connect 127.0.0.1:PORT`."""
    import threading

    from device_farm.errors import DeviceError
    from device_farm.virtual import PhoneLoop, VirtualPhone
    from device_farm.virtual.adb_auth import load_keys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the phones as Ctrl-C does
    key_files = list(adb_keys) if adb_keys else ([] if accept_new_keys else None)
    if processes > 1:
        return _serve_phone_processes(count, processes, host, port, key_files, accept_new_keys)
    try:  # read once, for every phone
        keys = load_keys(key_files) if key_files is not None else None
    except (DeviceError, OSError, UnicodeDecodeError) as exc:
        raise fail(f"--adb-keys: {exc}") from exc
    loop = PhoneLoop().start()
    phones: list[VirtualPhone] = []
    try:
        for i in range(count):
            at = port + i if port else 0
            phone = VirtualPhone(port=at, host=host, adb_keys=keys, accept_new_keys=accept_new_keys)
            try:
                phones.append(phone.start(loop))  # returns once listening, so the lines below are true when printed
            except OSError as exc:
                raise fail(f"cannot listen on {host}:{at}: {exc}") from exc
        if keys is not None:
            err.print(f"authentication required: {len(keys)} trusted host key(s){', new keys accepted' if accept_new_keys else ''}")
        for phone in phones:
            err.print(f"virtual phone {phone.serial} listening on {host}:{phone.port}; connect with: adb connect {host}:{phone.port}", soft_wrap=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        for phone in phones:
            phone.stop()
        loop.stop()


def _serve_phone_processes(count: int, processes: int, host: str, port: int, keys: list[Path] | None, accept_new_keys: bool) -> None:
    import threading

    from device_farm.virtual.phone_processes import PhoneProcesses, PhoneStartError

    if processes > count:
        raise fail(f"--processes {processes} is more than --count {count}")
    farm = PhoneProcesses(count, processes, host=host, port=port, adb_keys=keys, accept_new_keys=accept_new_keys)
    try:
        with console.status(f"starting {count} phones in {processes} processes"):
            farm.start()
    except PhoneStartError as exc:
        raise fail(str(exc)) from exc
    except KeyboardInterrupt:
        return
    try:
        for phone in farm.phones:
            err.print(f"virtual phone {phone.serial} listening on {phone.address}; connect with: adb connect {phone.address}", soft_wrap=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        farm.stop()


for verb in (devices, collect, replay, view):  # after run, show and serve in --help
    app.command()(verb)


if __name__ == "__main__":
    app()
