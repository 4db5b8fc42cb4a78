"""Parallel collection: episodes per hour with 16 virtual phones against one, side by side.

The planner is scripted but takes 200 ms a step (``--plan-ms``), standing in for a served model
that many workers share over HTTP; every episode is real otherwise — leased from the pool with its
health probe, seeded, run on the phone through adb and uiautomator2, verified, and written to the
store step by step. Prints episodes/hour for 1 and N phones, the ratio, and the ratio against
the target (>= 12x with 16 phones).

    python benchmarks/bench_collect.py --phones 16 --per-phone 4

``--planner local`` instead runs the embedded model, loaded once and shared by ``--phones``
workers (as ``collect --planner local -n N`` shares it), over as many different tasks: once with
one kept prompt prefix (each call follows another episode's and loses it) and once with one per
episode. Prints the planner's seconds per call (lock waits left out), prompt tokens computed per
call, and episodes/hour, side by side.

    python benchmarks/bench_collect.py --planner local --phones 2 --max-steps 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect, shared
from planner_runtime.contract import Message, Role, ToolCall, ToolSpec
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.local.planner import LocalPlanner
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import TaskSpec, find_task
from planner_runtime.trajectories.store import TrajectoryStore

TARGET = 12.0
LOCAL_TASKS = ("clock.set_alarm", "settings.wifi_off", "contacts.add_contact", "settings.bluetooth_on_gui")
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


@dataclass(frozen=True)
class Call:
    episode: str  # the episode's first user turn (its screen and goal)
    later: bool  # a later turn of its conversation, whose earlier turns a kept prefix can hold
    seconds: float
    computed: int  # prompt tokens run through the model (not taken from a kept prefix)


class Timed:
    """The local planner, timing each call from inside the shared lock (so waits are left out)."""

    def __init__(self, planner: LocalPlanner) -> None:
        self.planner, self.name, self.release = planner, planner.name, planner.release
        self.calls: list[Call] = []

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        started = time.perf_counter()
        out = self.planner.plan(messages, tools, sampling=sampling)
        seconds = time.perf_counter() - started
        first = next((m.content for m in messages if m.role == Role.user), "")
        later = any(m.role == Role.assistant for m in messages)
        computed = max(0, out.usage.prompt_tokens - self.planner.last_reused_tokens)
        self.calls.append(Call(str(first), later, seconds, computed))
        return out


def shared_local(slots: int, workers: int, max_steps: int, tmp: Path) -> tuple[Timed, float, int]:
    """One collection of ``workers`` different tasks on as many phones, every worker calling one
    local planner that keeps ``slots`` prompt prefixes: (its timings, episodes/hour, successes)."""
    planner = LocalPlanner(prefix_slots=slots).load()
    timed = Timed(planner)
    one = shared(timed)  # type: ignore[arg-type]
    tasks = [find_task(t) for t in LOCAL_TASKS[:workers]]
    home = tmp / f"local-{slots}"
    with DevicePool([VirtualSource(workers, home=home / "adb")], state_dir=home / "pool") as pool, \
            TrajectoryStore(home / "store.sqlite") as store:
        pool.status()
        started = time.perf_counter()
        _, progress = collect(tasks, pool=pool, store=store, planner_for=lambda t: one, workers=workers,
                              max_steps=max_steps)
        seconds = time.perf_counter() - started
    planner.close()
    return timed, len(tasks) / seconds * 3600, progress.success


def local_main(args: argparse.Namespace) -> None:
    if args.phones > len(LOCAL_TASKS):
        raise SystemExit(f"--planner local runs one task a phone: at most {len(LOCAL_TASKS)} phones")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for slots, label in ((1, "one kept prefix"), (args.slots, f"{args.slots} kept prefixes")):
            timed, per_hour, ok = shared_local(slots, args.phones, args.max_steps, Path(tmp))
            rows.append((label, timed, per_hour, ok))
    print(f"embedded local planner shared by {args.phones} workers, {args.phones} episodes of up to "
          f"{args.max_steps} steps ({', '.join(LOCAL_TASKS[: args.phones])}); seconds are the planner's, lock waits left out")
    for label, timed, per_hour, ok in rows:
        later = [c for c in timed.calls if c.later] or timed.calls
        print(f"{label:>18}: median {_median(timed.calls, 'seconds'):5.2f} s a call ({len(timed.calls)} calls), "
              f"{_median(later, 'seconds'):5.2f} s a later turn ({_median(later, 'computed'):4.0f} prompt tokens "
              f"computed); {per_hour:4.0f} episodes/hour ({ok}/{args.phones} succeeded)")
    for label, timed, _, _ in rows:
        episodes: dict[str, list[Call]] = {}
        for c in timed.calls:
            episodes.setdefault(c.episode, []).append(c)
        per_episode = ", ".join(f"{_median(calls, 'seconds'):.2f} s ({len(calls)} calls)" for calls in episodes.values())
        print(f"{label:>18}: median a call, episode by episode: {per_episode}")
    before, after = (_median([c for c in r[1].calls if c.later] or r[1].calls, "seconds") for r in rows)
    print(f"per-episode prefixes: later turns {before / after:.1f}x faster")


def _median(calls: Sequence[Call], field: str) -> float:
    return statistics.median(getattr(c, field) for c in calls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phones", type=int, default=16)
    ap.add_argument("--per-phone", type=int, default=4, help="Episodes per phone in each run.")
    ap.add_argument("--plan-ms", type=float, default=200.0)
    ap.add_argument("--planner", choices=("scripted", "local"), default="scripted")
    ap.add_argument("--max-steps", type=int, default=2, help="Steps an episode (--planner local).")
    ap.add_argument("--slots", type=int, default=8, help="Kept prompt prefixes (--planner local).")
    args = ap.parse_args()
    if args.planner == "local":
        local_main(args)
        return
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
