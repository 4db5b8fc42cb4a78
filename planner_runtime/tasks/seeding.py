"""Seed a task's initial state onto a phone through the same mechanisms a real phone offers."""

from __future__ import annotations

from device_farm import Device
from device_farm.android import content_insert
from device_farm.errors import ShellCommandError
from planner_runtime.tasks.spec import TaskSpec


def seed(task: TaskSpec, device: Device) -> None:
    """Run the task's setup actions in order; a failing action raises a DeviceError."""
    for action in task.setup:
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
