"""Seed a task's initial state onto a phone through the same mechanisms a real phone offers.

Parameters reach the phone as data only: values as ``content insert --bind`` arguments, a
``where`` rendered with its parameters as SQL values, files as bytes over sync or as a shell
argument, and every command as an argv list the device backend quotes.
"""

from __future__ import annotations

from device_farm import Device
from device_farm.android import content_delete, content_insert, installed_packages, put_setting
from device_farm.errors import AppNotInstalled, ShellCommandError
from planner_runtime.harness.memory.records import Memory, MemoryKind, Trigger
from planner_runtime.harness.memory.search import MemoryStore
from planner_runtime.tasks.spec import TaskSpec


def seeds_memory(task: TaskSpec) -> bool:
    return any(action.memory is not None for action in task.setup)


def seed(task: TaskSpec, device: Device, memory: MemoryStore | None = None) -> None:
    """Run the task's setup actions in order; a failing action raises a DeviceError. Memory
    actions go to ``memory``; without one they are skipped (re-executing recorded calls needs
    no memory; :func:`~planner_runtime.runs.run.run_goal` always gives one to such a task)."""
    if task.requires_apps:
        missing = sorted(set(task.requires_apps) - installed_packages(device))
        if missing:
            raise AppNotInstalled(f"task {task.id} needs {', '.join(missing)}, not installed on {device.serial}")
    for action in task.setup:
        if action.memory is not None:
            if memory is None:
                continue
            m = action.memory
            trigger = Trigger.parse(task.render(m.trigger)) if m.trigger else None
            memory.add(Memory(kind=MemoryKind(m.kind), text=task.render(m.text), provenance=f"task:{task.id}", confidence=m.confidence, trigger=trigger))
            continue
        if action.world is not None:
            continue  # the simulated world is seeded where the episode's world is made (tasks.world)
        if action.content_insert is not None:
            values = {k: task.render(v) if isinstance(v, str) else v for k, v in action.content_insert.values.items()}
            content_insert(device, task.render(action.content_insert.uri), values)
        elif action.content_delete is not None:
            where = action.content_delete.where
            content_delete(device, task.render(action.content_delete.uri), where=task.render_where(where) if where else None)
        elif action.settings_put is not None:
            s = action.settings_put
            put_setting(device, s.namespace, s.key, task.render(s.value) if isinstance(s.value, str) else s.value)
        elif action.file_push is not None:
            write_file(device, task.render(action.file_push.path), task.render(action.file_push.content).encode())
        elif action.folder_empty is not None:
            empty_folder(device, task.render(action.folder_empty.path))


def empty_folder(device: Device, path: str) -> None:
    """Delete what ``path`` holds and leave it an empty folder (made if it was missing)."""
    for argv in (["rm", "-rf", path], ["mkdir", "-p", path]):
        done = device.shell(argv)
        if not done.ok:
            raise ShellCommandError(" ".join(argv[:2]), done.exit_code, done.output)


def write_file(device: Device, path: str, data: bytes) -> None:
    """Put a file on the phone: over the sync protocol when the device offers ``push`` (as
    ``adb push`` does), else through the shell with the bytes passed as an argument, never
    spliced into the command text. The parent folder is created first."""
    parent = path.rsplit("/", 1)[0] or "/"
    made = device.shell(["mkdir", "-p", parent])
    if not made.ok:
        raise ShellCommandError("mkdir -p", made.exit_code, made.output)
    push = getattr(device, "push", None)
    if push is not None:
        push(data, path)
        return
    result = device.shell(["sh", "-c", 'printf %s "$1" > "$2"', "sh", data.decode("utf-8"), path])
    if not result.ok:
        raise ShellCommandError(f"write {path}", result.exit_code, result.output)
