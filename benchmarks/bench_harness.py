"""Harness overhead per step, model and device time excluded (issue target: ≤ 5 ms median).

Runs whole episodes through ``run_goal`` — tool and skill choice, the episode loop, tool
validation, the safety gate, screen parsing and diffing, feedback text, the SQLite trajectory
store written per step — on the virtual phone behind the real adb server, with the scripted
planner. Every device call is timed by a proxy around the ``AdbDevice`` and every planner call
by a wrapper, so for each step

    harness = step wall time − time inside device calls − time inside the planner

where a step runs from the end of the previous one (its ``on_step``) to the end of its own.
Prints the median and p90 of that, the device and planner time per step beside it, the
trajectory store's share (``append_step``), and per episode its start (choosing tools and
skills, the first screen, the header, step 1) and its end (closing and reading back the trajectory).

    python benchmarks/bench_harness.py [--episodes 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from device_farm.adb.device import AdbDevice
from device_farm.adb.server import AdbServer
from device_farm.android import content_insert
from device_farm.virtual import VirtualPhone
from planner_runtime.contract import DeviceRef, Step
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity

GOAL = "Set an alarm for 7:30, then show me my contacts"
SCRIPT = [
    {"name": "open_app", "arguments": {"app": "Clock"}},
    {"name": "read_screen", "arguments": {}},
    {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
    {"name": "back", "arguments": {}},
    {"name": "open_app", "arguments": {"app": "Contacts"}},
    {"name": "scroll", "arguments": {"direction": "down"}},
    {"name": "read_screen", "arguments": {}},
    {"name": "home", "arguments": {}},
    {"name": "finish", "arguments": {"answer": "Alarm set for 7:30; your contacts are on screen."}},
]


class Clock:
    """Seconds spent inside wrapped calls, summed."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


class TimedDevice:
    """The device with every method call timed (attributes pass through)."""

    def __init__(self, device: AdbDevice, clock: Clock) -> None:
        self._device, self._clock = device, clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._device, name)
        return self._clock.wrap(value) if callable(value) else value


class TimedPlanner:
    def __init__(self, planner: ScriptedPlanner, clock: Clock) -> None:
        self.name, self.release = planner.name, planner.release
        self.plan = clock.wrap(planner.plan)


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=20)
    episodes = ap.parse_args().episodes
    device_clock, plan_clock, store_clock = Clock(), Clock(), Clock()
    harness_ms: list[float] = []
    device_ms: list[float] = []
    plan_ms: list[float] = []
    store_ms: list[float] = []
    by_tool: dict[str, list[tuple[float, float]]] = {}
    setup_ms: list[float] = []  # from run_goal's call to the end of step 1
    close_ms: list[float] = []  # from the end of the last step to run_goal's return
    with VirtualPhone() as phone, AdbServer() as server, tempfile.TemporaryDirectory() as tmp:
        serial = server.connect_device(phone.address)
        real = AdbDevice(serial, adb_port=server.port)
        real.connect()
        for i in range(40):  # a contact list long enough to scroll
            content_insert(real, "content://com.android.contacts/raw_contacts", {"display_name": f"Person {i:02d}", "phone": f"+1 555 01{i:02d}"})
        device = TimedDevice(real, device_clock)
        with TrajectoryStore(Path(tmp) / "trajectories.sqlite") as store:
            store.append_step = store_clock.wrap(store.append_step)  # type: ignore[method-assign]
            for episode in range(episodes + 1):  # the first one warms caches and is not counted
                marks: list[tuple[float, float, float, float]] = []
                names: list[str] = []

                def mark(step: Step) -> None:
                    marks.append((time.perf_counter(), device_clock.seconds, plan_clock.seconds, store_clock.seconds))
                    names.append(step.tool_call.name if step.tool_call else "-")

                real.press("home")
                started = (time.perf_counter(), device_clock.seconds, plan_clock.seconds, store_clock.seconds)
                traj = run_goal(GOAL, device=device, identity=EpisodeIdentity(device=DeviceRef(serial=serial, model="virtual")),
                         planner=TimedPlanner(ScriptedPlanner(SCRIPT), plan_clock), store=store, on_step=mark)
                ended = (time.perf_counter(), device_clock.seconds, plan_clock.seconds, store_clock.seconds)
                failed = [(s.tool_call.name, s.feedback.error) for s in traj.steps if s.feedback.status.value != "ok"]
                if failed:
                    raise SystemExit(f"a scripted step failed, the figures would not be of real work: {failed}")
                if episode == 0:
                    continue
                for name, before, after in zip(names[1:], marks, marks[1:]):
                    wall, dev, plan, st = (a - b for a, b in zip(after, before))
                    harness_ms.append((wall - dev - plan) * 1000)
                    by_tool.setdefault(name, []).append((harness_ms[-1], dev * 1000))
                    device_ms.append(dev * 1000)
                    plan_ms.append(plan * 1000)
                    store_ms.append(st * 1000)
                for spans, (a, b) in ((setup_ms, (started, marks[0])), (close_ms, (marks[-1], ended))):
                    spans.append(((b[0] - a[0]) - (b[1] - a[1]) - (b[2] - a[2])) * 1000)
        real.close()

    med = statistics.median
    print(f"{episodes} episodes x {len(SCRIPT)} steps on the virtual phone (scripted planner), steps 2..{len(SCRIPT)} of each")
    print(f"  harness per step      median {med(harness_ms):6.2f} ms   p90 {pct(harness_ms, 0.9):6.2f} ms   (target <= 5 ms median)")
    print(f"    of it, store write  median {med(store_ms):6.2f} ms")
    print(f"  device per step       median {med(device_ms):6.2f} ms   (excluded)")
    print(f"  planner per step      median {med(plan_ms):6.2f} ms   (excluded; scripted, parsing included)")
    print(f"  episode start         median {med(setup_ms):6.2f} ms   (tools, skills, first screen, header and step 1; device time excluded)")
    print(f"  episode end           median {med(close_ms):6.2f} ms   (closing the trajectory, reading it back)")
    for name, pairs in by_tool.items():
        print(f"    {name:12} harness {med(p[0] for p in pairs):6.2f} ms   device {med(p[1] for p in pairs):6.2f} ms")
    print(f"  harness share of a step: {med(harness_ms) / (med(harness_ms) + med(device_ms)):.0%} (model time aside)")


if __name__ == "__main__":
    main()
