"""Parallel collection: episodes per hour with 16 virtual phones against one, side by side.

The planner is scripted but takes 200 ms a step (``--plan-ms``), standing in for a served model
that many workers share over HTTP; every episode is real otherwise — leased from the pool with its
health probe, seeded, run on the phone through adb and uiautomator2, verified, and written to the
store step by step. Prints episodes/hour for 1 and N phones, the ratio, and the ratio against
the target (>= 12x with 16 phones).

    python benchmarks/bench_collect.py --phones 16 --per-phone 4
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Sequence

from device_farm.adbsource import VirtualSource
from device_farm.pool import DevicePool
from planner_runtime.collect import collect
from planner_runtime.contract import Message, ToolCall, ToolSpec
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import TaskSpec, find_task
from planner_runtime.trajectories import TrajectoryStore

TARGET = 12.0
SCRIPT = [ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30}), ToolCall(name="finish", arguments={"answer": "Set."})]


class SlowScripted(ScriptedPlanner):
    """The scripted planner, ``delay`` seconds a turn (as a served model's latency)."""

    def __init__(self, delay: float) -> None:
        super().__init__(SCRIPT, release="bench-slow")
        self.delay = delay

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        time.sleep(self.delay)
        return super().plan(messages, tools, sampling=sampling)


def episodes_per_hour(task: TaskSpec, phones: int, episodes: int, delay: float, tmp: Path) -> tuple[float, int, float]:
    """(episodes/hour, successes, seconds) for ``episodes`` episodes over ``phones`` phones."""
    with DevicePool([VirtualSource(phones, home=tmp / f"adb-{phones}")], state_dir=tmp / f"pool-{phones}") as pool, \
            TrajectoryStore(tmp / f"store-{phones}.sqlite") as store:
        pool.status()  # start the phones and the adb server before the clock starts
        started = time.perf_counter()
        _, progress = collect([task], pool=pool, store=store, planner_for=lambda t: SlowScripted(delay),
                              workers=phones, repeat=episodes)
        seconds = time.perf_counter() - started
    return episodes / seconds * 3600, progress.success, seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phones", type=int, default=16)
    ap.add_argument("--per-phone", type=int, default=4, help="Episodes per phone in each run.")
    ap.add_argument("--plan-ms", type=float, default=200.0)
    args = ap.parse_args()
    task = find_task("clock.set_alarm")
    delay = args.plan_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        one, ok1, s1 = episodes_per_hour(task, 1, args.per_phone, delay, Path(tmp))
        many, okn, sn = episodes_per_hour(task, args.phones, args.phones * args.per_phone, delay, Path(tmp))
    ratio = many / one
    print(f"planner {args.plan_ms:.0f} ms a step, 2 steps an episode ({task.id}); {args.per_phone} episodes per phone")
    print(f"1 phone:    {one:8.0f} episodes/hour  ({ok1}/{args.per_phone} succeeded in {s1:.1f} s)")
    print(f"{args.phones} phones:  {many:8.0f} episodes/hour  ({okn}/{args.phones * args.per_phone} succeeded in {sn:.1f} s)")
    print(f"{args.phones} phones / 1 phone: {ratio:.1f}x  (target {TARGET:.0f}x: {ratio / TARGET:.2f} of it, "
          f"{'meets' if ratio >= TARGET else 'misses'})")


if __name__ == "__main__":
    main()
