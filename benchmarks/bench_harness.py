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

Two goals run side by side: a phone-only one, and one that also reads a simulated service (the
episode has a world, so all of the catalogue's 200+ simulated tools compete for the prompt).
For each it prints the tools offered and their schemas' size: the phone-only goal must be
offered the same tools with a world as without (prompts do not grow with the catalogue).
"""

from __future__ import annotations

import argparse
import json
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
from planner_runtime.harness.tools.simulated.tool import fresh_world, simulated_tools

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


GOAL_WORLD = "What's the weather in Paris right now? Then set an alarm for 7:30 and show me my contacts"
SCRIPT_WORLD = [{"name": "weather_now", "arguments": {"city": "Paris"}}] + SCRIPT[:-1] + [
    {"name": "finish", "arguments": {"answer": "14°C and cloudy in Paris; alarm set for 7:30."}}]


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


def measure(goal: str, script: list[dict], episodes: int, with_world: bool) -> dict[str, Any]:
    """Harness milliseconds per step (and the rest) over ``episodes`` episodes of ``script``."""
    device_clock, plan_clock, store_clock = Clock(), Clock(), Clock()
    harness_ms: list[float] = []
    device_ms: list[float] = []
    plan_ms: list[float] = []
    store_ms: list[float] = []
    by_tool: dict[str, list[tuple[float, float]]] = {}
    setup_ms: list[float] = []  # from run_goal's call to the end of step 1
    close_ms: list[float] = []  # from the end of the last step to run_goal's return
    offered: tuple = ()
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
                traj = run_goal(goal, device=device, identity=EpisodeIdentity(device=DeviceRef(serial=serial, model="virtual")),
                                planner=TimedPlanner(ScriptedPlanner(script), plan_clock), store=store, on_step=mark,
                                world=fresh_world() if with_world else None)
                ended = (time.perf_counter(), device_clock.seconds, plan_clock.seconds, store_clock.seconds)
                failed = [(s.tool_call.name, s.feedback.error) for s in traj.steps if s.feedback.status.value != "ok"]
                if failed:
                    raise SystemExit(f"a scripted step failed, the figures would not be of real work: {failed}")
                offered = traj.tools
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
    return {"harness": harness_ms, "store": store_ms, "device": device_ms, "plan": plan_ms, "setup": setup_ms,
            "close": close_ms, "by_tool": by_tool, "offered": offered}


def report(title: str, r: dict[str, Any]) -> None:
    med = statistics.median
    schema = sum(len(json.dumps(t.model_dump(mode="json"))) for t in r["offered"])
    print(title)
    print(f"  tools offered         {len(r['offered'])} ({schema:,} characters of schema)")
    print(f"  harness per step      median {med(r['harness']):6.2f} ms   p90 {pct(r['harness'], 0.9):6.2f} ms   (target <= 5 ms median)")
    print(f"    of it, store write  median {med(r['store']):6.2f} ms")
    print(f"  device per step       median {med(r['device']):6.2f} ms   (excluded)")
    print(f"  planner per step      median {med(r['plan']):6.2f} ms   (excluded; scripted, parsing included)")
    print(f"  episode start         median {med(r['setup']):6.2f} ms   (tools, skills, first screen, header and step 1; device time excluded)")
    print(f"  episode end           median {med(r['close']):6.2f} ms   (closing the trajectory, reading it back)")
    for name, pairs in r["by_tool"].items():
        print(f"    {name:12} harness {med(p[0] for p in pairs):6.2f} ms   device {med(p[1] for p in pairs):6.2f} ms")
    print(f"  harness share of a step: {med(r['harness']) / (med(r['harness']) + med(r['device'])):.0%} (model time aside)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=20)
    episodes = ap.parse_args().episodes
    print(f"{len(simulated_tools())} simulated tools in the catalogue; {episodes} episodes a goal, steps 2.. of each")
    phone = measure(GOAL, SCRIPT, episodes, with_world=False)
    phone_world = measure(GOAL, SCRIPT, episodes, with_world=True)
    services = measure(GOAL_WORLD, SCRIPT_WORLD, episodes, with_world=True)
    report(f"phone goal, no world: {GOAL!r}", phone)
    report("the same goal in an episode with a world (every simulated service competing)", phone_world)
    report(f"a goal that also reads a service: {GOAL_WORLD!r}", services)
    same = [t.name for t in phone["offered"]] == [t.name for t in phone_world["offered"]]
    print(f"phone goal offered the same tools with and without the services: {same}")
    print(f"harness median, services goal / phone goal: {statistics.median(services['harness']) / statistics.median(phone['harness']):.2f}x")


if __name__ == "__main__":
    main()
