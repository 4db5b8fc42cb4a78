"""The run entry drives any :class:`device_farm.Device`, not only an ``AdbDevice``: a device that
offers the protocol's methods and nothing else (no adb client, no uiautomator2 handle, no
attribute it does not declare) seeds a task, runs an episode with a GUI tap, an app tool and a
delegated sub-agent, and is verified — on the virtual phone, through the real adb server."""

from __future__ import annotations

from typing import Sequence

from device_farm import Device, DeviceInfo, Payload, ShellResult
from device_farm.adb.device import AdbDevice
from planner_runtime.contract import DeviceRef, FeedbackStatus, Source, TrajectoryStatus
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task


class ProtocolOnly:
    """The :class:`Device` protocol over another device and nothing more; it counts the calls
    it forwards, so a test sees the episode went through it."""

    __slots__ = ("serial", "_inner", "calls")

    def __init__(self, inner: Device) -> None:
        self.serial, self._inner, self.calls = inner.serial, inner, {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def connect(self) -> None:
        self._inner.connect()

    def close(self) -> None:
        self._inner.close()

    def info(self) -> DeviceInfo:
        self._count("info")
        return self._inner.info()

    def shell(self, command: str | Sequence[str], *, timeout: float = 20.0) -> ShellResult:
        self._count("shell")
        return self._inner.shell(command, timeout=timeout)

    def dump_hierarchy(self) -> str:
        self._count("dump_hierarchy")
        return self._inner.dump_hierarchy()

    def click(self, x: int, y: int) -> None:
        self._count("click")
        self._inner.click(x, y)

    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None:
        self._inner.long_press(x, y, seconds)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.3) -> None:
        self._inner.swipe(x1, y1, x2, y2, seconds)

    def set_text(self, selector: dict, text: str) -> None:
        self._inner.set_text(selector, text)

    def press(self, key: str) -> None:
        self._count("press")
        self._inner.press(key)

    def screenshot(self) -> bytes:
        return self._inner.screenshot()

    def push(self, data: Payload, remote: str, mode: int = 0o644) -> None:
        self._count("push")
        self._inner.push(data, remote, mode)


def test_an_episode_runs_on_a_device_that_is_only_the_protocol(device, virtual_phone, store):
    phone = ProtocolOnly(device)
    assert isinstance(phone, Device) and not isinstance(phone, AdbDevice)
    task = find_task("clock.set_alarm")
    identity = EpisodeIdentity(device=DeviceRef(serial=virtual_phone.serial, model="virtual", kind="protocol-only"), source=Source.sandbox)
    script = [
        {"name": "open_app", "arguments": {"app": "Clock"}},  # the screen: a launch, a hierarchy dump
        {"name": "delegate", "arguments": {"goal": "Set an alarm for 7:30", "tools": ["set_alarm"], "budget": 2}},
        {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},  # the child's turns
        {"name": "finish", "arguments": {"answer": "set"}},
        {"name": "finish", "arguments": {"answer": "Alarm set for 7:30"}},  # the parent again
    ]
    traj = run_goal(task.rendered_goal(), device=phone, identity=identity, planner=ScriptedPlanner(script), store=store, task=task)

    assert traj.status is TrajectoryStatus.finished and traj.verdict.success, traj.verdict
    assert [s.feedback.status for s in traj.steps] == [FeedbackStatus.ok] * 3
    assert traj.device.kind == "protocol-only" and traj.task_id == task.id
    child = store.get(traj.steps[1].feedback.result["trajectory"])
    assert child.status is TrajectoryStatus.finished and child.device == traj.device and child.parent == traj.id
    assert phone.calls["shell"] > 0 and phone.calls["dump_hierarchy"] > 0 and phone.calls["press"] > 0
