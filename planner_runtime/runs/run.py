"""Put the parts together for one goal: pick a device, seed the task, run the episode, verify.

:func:`open_device` finds a phone — the given serial, else the first phone on the adb server,
else the built-in virtual phone behind a private adb server; a phone that is listed but not
ready (unauthorized, offline) is reported, never replaced by the virtual one. Only the default
adb server may be missing or empty for the virtual phone to stand in: a server the user named
(``--adb``, PLANNER_AGENT_ADB) that is not there, or a ``--serial`` it does not list, is the
user's mistake, a :class:`ConfigError`. :func:`run_goal` runs one episode on it, writing the
trajectory and, when the goal is a task, its verdict.

Seeding a task resets data on the phone (its setup deletes alarms, contacts, settings...), so
:func:`check_reset` allows it on the built-in virtual phone and on phones the user marked
disposable, and elsewhere only when the user said so (``--allow-reset``), with a warning that
names what will be reset. A free-form goal is never seeded nor verified.
"""

from __future__ import annotations

import socket
from dataclasses import replace
from contextlib import ExitStack, contextmanager
from typing import Callable, Iterable, Iterator

from device_farm import Device
from device_farm.adb.device import AdbDevice, list_states
from device_farm.adb.server import AdbServer
from device_farm.health import not_ready_reason
from planner_runtime.contract import DeviceRef, Source, Step, Trajectory, new_id
from planner_runtime.errors import ConfigError
from planner_runtime.harness.assembly import plan_run, run_limits
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.memory.episodes import MemoryStore, record_episode, scratch_store
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.subagents import Delegate, Lineage
from planner_runtime.harness.tools import ToolContext
from planner_runtime.harness.tools.user import Answerer, ScriptedAnswers, chain
from planner_runtime.planners import Planner
from planner_runtime.tasks.seeding import seed, seeds_memory
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.tasks.verifiers import verify
from planner_runtime.tasks.world import task_world
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.harness.tools.simulated.world import World
from planner_runtime.trajectories.store import TrajectoryStore


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.3).close()
        return True
    except OSError:
        return False


def _not_ready(serial: str, state: str) -> ConfigError:
    return ConfigError(not_ready_reason(serial, state))


def _pick_serial(serial: str | None, adb_host: str, adb_port: int, named: bool) -> str | None:
    """The serial to drive: the given one once it is ready, else the first ready phone, else
    ``None`` (the default server is down or lists no phone: the virtual phone is used)."""
    where = f"adb server {adb_host}:{adb_port}"
    if not _listening(adb_host, adb_port):
        if serial is None and not named:
            return None
        raise ConfigError(f"no {where} is listening: start it (adb -P {adb_port} start-server) or check --adb / PLANNER_AGENT_ADB"
                          + ("; leave both out to use the built-in virtual phone" if serial is None else ""))
    states = list_states(adb_host, adb_port)
    if serial is not None:
        if serial not in states:
            listed = ", ".join(f"{s} ({state})" for s, state in states.items()) or "none"
            raise ConfigError(f"no phone {serial!r} on the {where}; it lists: {listed}")
        if states[serial] != "device":
            raise _not_ready(serial, states[serial])
        return serial
    ready = [s for s, state in states.items() if state == "device"]
    if ready:
        return ready[0]
    if states:  # a phone is plugged in but not usable: say so rather than quietly use another
        raise _not_ready(*next(iter(states.items())))
    if named:
        raise ConfigError(f"the {where} lists no phone: connect one (adb -P {adb_port} connect HOST:PORT), or pass --virtual")
    return None


@contextmanager
def open_device(
    serial: str | None, adb_host: str, adb_port: int, *, say: Callable[[str], None] = print, virtual: bool = False,
    named: bool = False,
) -> Iterator[tuple[Device, EpisodeIdentity]]:
    """Yield a connected device and the identity of an episode on it (its reference and the
    trajectory source it implies); with
    ``virtual``, the built-in virtual phone whatever is attached. ``named``: the user named this
    adb server, so it must be there and list a phone (no virtual phone stands in)."""
    with ExitStack() as stack:
        serial = None if virtual else _pick_serial(serial, adb_host, adb_port, named)
        if serial is not None:
            device = AdbDevice(serial, adb_host=adb_host, adb_port=adb_port)
            source = Source.real
        else:
            from device_farm.virtual import VirtualPhone  # only when no phone is attached

            phone = stack.enter_context(VirtualPhone())
            server = stack.enter_context(AdbServer())
            serial = server.connect_device(f"127.0.0.1:{phone.port}")
            why = "As asked" if virtual else "No phone attached"
            say(f"{why}: started the built-in virtual phone at {serial} (private adb server on port {server.port}).")
            device = AdbDevice(serial, adb_host=server.host, adb_port=server.port)
            source = Source.sandbox
        device.connect()
        stack.callback(device.close)
        info = device.info()
        yield device, EpisodeIdentity(device=DeviceRef(serial=serial, model=info.model, kind="adb"), source=source)


def reset_plan(task: TaskSpec) -> list[str]:
    """What seeding ``task`` changes on the phone, one phrase per setup action (memory seeds go
    to a scratch memory and are not listed)."""
    plan = []
    for action in task.setup:
        if action.content_delete is not None:
            rows = f"the rows where {task.render(action.content_delete.where)}" if action.content_delete.where else "every row"
            plan.append(f"delete {rows} of {task.render(action.content_delete.uri)}")
        elif action.content_insert is not None:
            plan.append(f"insert a row into {task.render(action.content_insert.uri)}")
        elif action.settings_put is not None:
            put = action.settings_put
            plan.append(f"set {put.namespace} {put.key} to {task.render(put.value) if isinstance(put.value, str) else put.value}")
        elif action.file_push is not None:
            plan.append(f"overwrite {task.render(action.file_push.path)}")
        elif action.folder_empty is not None:
            plan.append(f"delete everything in {task.render(action.folder_empty.path)}")
    return plan


def check_reset(
    task: TaskSpec,
    identity: EpisodeIdentity,
    *,
    allow_reset: bool,
    disposable: Iterable[str] = (),
    warn: Callable[[str], None] = print,
) -> None:
    """Raise :class:`ConfigError` unless seeding ``task`` on this phone is allowed; warn when it
    is allowed only by ``allow_reset``. The built-in virtual phone (``Source.sandbox``) and the
    ``disposable`` serials may always be reset; a task without device setup resets nothing."""
    device_ref, source = identity.device, identity.source
    plan = reset_plan(task)
    if not plan or source is Source.sandbox or device_ref.serial in set(disposable):
        return
    what = "; ".join(plan)
    if not allow_reset:
        raise ConfigError(
            f"task {task.id} resets data on phone {device_ref.serial} ({what}); nothing was changed. "
            "Pass --allow-reset if its data may be lost, list it in PLANNER_AGENT_DISPOSABLE_SERIALS, "
            "or run on the built-in virtual phone (--virtual)"
        )
    warn(f"warning: --allow-reset: task {task.id} now resets phone {device_ref.serial}: {what}")


def run_goal(
    goal: str,
    *,
    device: Device,
    identity: EpisodeIdentity,
    planner: Planner,
    store: TrajectoryStore,
    task: TaskSpec | None = None,
    max_steps: int | None = None,
    on_step: Callable[[Step], None] | None = None,
    gate: SafetyGate | None = None,
    memory: MemoryStore | None = None,
    ask: Answerer | None = None,
    max_tokens: int | None = None,
    on_child_step: Callable[[Step], None] | None = None,
    trajectory_id: str | None = None,
    world: World | None = None,
    simulator: LlmSimulator | None = None,
) -> Trajectory:
    """Run one episode on ``device`` (any :class:`~device_farm.Device`); seed before and verify
    after when ``task`` is given.

    ``identity`` says where the episode runs and what it belongs to (source, device, collection,
    item); its task is ``task``'s. ``max_steps`` overrides the task's own limit; without either
    the default is 12. The episode is planned by :func:`~planner_runtime.harness.assembly.plan_run`.
    With ``memory`` (a user's profile, open), what it knows that bears on the goal and the due
    reminders are appended to the system prompt, the memory tools are offered, and a summary of
    the episode is written to it at the end. A task that seeds memories always runs on a scratch
    store instead, given a profile or not: its seeds never enter a real profile (see
    :mod:`planner_runtime.harness.memory.episodes`), and its checks see the task's memories only.
    ``ask_user`` is answered by the task's scripted ``user_answers`` first, then by ``ask`` (the
    person at the terminal, or a file of answers); without either, no user is available.
    ``on_child_step`` sees the steps of delegated sub-agents as they happen. ``trajectory_id``
    (default: a new one) lets a caller name the episode before it starts, e.g. to report it
    when interrupted. Seeding is not checked here: callers that may reach a real phone call
    :func:`check_reset` first. A task that uses simulated tools runs in a simulated ``world``
    (default: its own, made by :func:`~planner_runtime.tasks.world.world_for`, with
    ``simulator`` writing the responses when given); on the built-in phone its source is then
    ``simulated``. A free-form goal has no world, so no simulated tool is offered to it.
    """
    identity = identity.for_task(task.id if task else None)
    world = world if world is not None else task_world(task, simulator)
    if world is not None and identity.source is Source.sandbox:
        identity = replace(identity, source=Source.simulated)
    with ExitStack() as stack:
        if task is not None and seeds_memory(task):
            memory = stack.enter_context(scratch_store())
        if task is not None:
            seed(task, device, memory)
            device.press("home")
        trajectory_id = trajectory_id or new_id("traj_")
        scripted = None
        if task is not None and task.user_answers:
            scripted = ScriptedAnswers.from_mapping({k: task.render(v) for k, v in task.user_answers.items()}, f"task {task.id}")
        limits = run_limits(max_steps=max_steps, task_steps=task.max_steps if task else None, max_tokens=max_tokens)
        lineage = Lineage(planner=planner, store=store, identity=identity, parent_id=trajectory_id, limits=limits, on_step=on_child_step)
        ctx = ToolContext(device=device, gate=gate or SafetyGate(), world=world)
        plan = plan_run(goal, ctx, limits=limits, trajectory_id=trajectory_id, memory=memory, user=chain(scripted, ask),
                        delegate=lambda tools: Delegate(tools, lineage))
        episode = plan.episode(planner=planner, ctx=ctx, store=store, identity=identity, on_step=on_step, trajectory_id=trajectory_id)
        trajectory = episode.run()
        if task is not None:
            verdict = verify(task, device, trajectory, world)
            store.set_verdict(trajectory.id, verdict)
            trajectory = store.get(trajectory.id)
        if memory is not None:
            record_episode(memory, trajectory)
    return trajectory
