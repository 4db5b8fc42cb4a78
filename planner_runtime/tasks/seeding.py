"""Seed a task's initial state onto a phone through the same mechanisms a real phone offers."""

from __future__ import annotations

from device_farm import Device
from device_farm.android import content_insert
from device_farm.errors import ShellCommandError
from planner_runtime.harness.memory_records import Memory, MemoryKind, Trigger
from planner_runtime.harness.memory_search import MemoryStore
from planner_runtime.tasks.spec import TaskSpec


def seeds_memory(task: TaskSpec) -> bool:
    return any(action.memory is not None for action in task.setup)


def seed(task: TaskSpec, device: Device, memory: MemoryStore | None = None) -> None:
    """Run the task's setup actions in order; a failing action raises a DeviceError. Memory
    actions go to ``memory``; without one they are skipped (re-executing recorded calls needs
    no memory; :func:`~planner_runtime.runner.run_goal` always gives one to such a task)."""
    for action in task.setup:
        if action.memory is not None:
            if memory is None:
                continue
            m = action.memory
            trigger = Trigger.parse(task.render(m.trigger)) if m.trigger else None
            memory.add(Memory(kind=MemoryKind(m.kind), text=task.render(m.text), provenance=f"task:{task.id}", confidence=m.confidence, trigger=trigger))
            continue
        if action.content_insert is not None:
            values = {k: task.render(v) if isinstance(v, str) else v for k, v in action.content_insert.values.items()}
            content_insert(device, task.render(action.content_insert.uri), values)
        elif action.content_delete is not None:
            args = ["content", "delete", "--uri", task.render(action.content_delete.uri)]
            if action.content_delete.where:
                args += ["--where", task.render(action.content_delete.where)]
            result = device.shell(args)
            if not result.ok:
                raise ShellCommandError("content delete", result.exit_code, result.output)
