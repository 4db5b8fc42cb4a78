"""Trajectory store write speed: step commits per second, one writer against 16 writer threads.

Each writer runs its own episodes in one shared store file (WAL), committing every step as it
happens — as parallel collection does. A step is a realistic record: the rendered model input
(system prompt, goal, earlier turns), raw output, tool call, and feedback with a compact screen.
Prints steps/s for 1 and 16 writers side by side, the ratio, and the figure against the target
(>= 2,000 steps/s from 16 writers).

    python benchmarks/bench_store.py --seconds 5
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from planner_runtime.contract import (
    DeviceRef, Feedback, Message, Observation, Role, Source, Step, ToolCall, Trajectory, TrajectoryStatus, Usage,
)
from planner_runtime.trajectories.store import TrajectoryStore

TARGET = 2000.0
SCREEN = "\n".join(f"[{i}] TextView 'Row {i}: alarm 0{i % 10}:30 Gym' (10,{i * 90},1070,{i * 90 + 80}) tap" for i in range(18))


def _step(index: int) -> Step:
    messages = [Message(role=Role.system, content="You are an assistant on an Android phone. " * 40),
                Message(role=Role.user, content="Turn off my 6:15 alarm")]
    for i in range(index):
        messages += [Message(role=Role.assistant, content='<tool_call>{"name": "read_screen", "arguments": {}}</tool_call>'),
                     Message(role=Role.tool, content=SCREEN[:600], tool_call_id=f"call_{i}")]
    call = ToolCall(name="tap", arguments={"element": index})
    obs = Observation(package="com.google.android.deskclock", screen=SCREEN, digest="d" * 16)
    return Step(index=index, messages=tuple(messages), raw_output=f'<tool_call>{{"name": "tap", "arguments": {{"element": {index}}}}}</tool_call>',
                tool_call=call, feedback=Feedback.ok(call.call_id, {"tapped": index}, obs),
                usage=Usage(prompt_tokens=900 + 150 * index, completion_tokens=18), plan_seconds=0.2, act_seconds=0.01)


def _writer(store: TrajectoryStore, steps: list[Step], stop: threading.Event, counts: list[int], slot: int) -> None:
    while not stop.is_set():
        traj = Trajectory(goal="Turn off my 6:15 alarm", source=Source.sandbox, device=DeviceRef(serial=f"emulator-{5554 + 2 * slot}"),
                          planner="scripted")
        store.begin(traj)
        for step in steps:
            store.append_step(traj.id, step)
            counts[slot] += 1
            if stop.is_set():
                break
        store.end(traj.id, TrajectoryStatus.finished, answer="done", usage=Usage())


def steps_per_second(path: Path, writers: int, seconds: float) -> tuple[float, int]:
    steps = [_step(i) for i in range(8)]  # an 8-step episode, records built once (not timed)
    counts = [0] * writers
    stop = threading.Event()
    with TrajectoryStore(path) as store:
        threads = [threading.Thread(target=_writer, args=(store, steps, stop, counts, i)) for i in range(writers)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    return sum(counts) / elapsed, sum(counts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--writers", type=int, default=16)
    args = ap.parse_args()
    size = len(_step(7).to_json())
    with tempfile.TemporaryDirectory() as tmp:
        one, n1 = steps_per_second(Path(tmp) / "one.sqlite", 1, args.seconds)
        many, nm = steps_per_second(Path(tmp) / "many.sqlite", args.writers, args.seconds)
        db_mb = (Path(tmp) / "many.sqlite").stat().st_size / 1e6
    print(f"step record: {size / 1000:.1f} kB as JSON (the 8th step of an episode)")
    print(f"1 writer:            {one:8.0f} steps/s  ({n1} steps)")
    print(f"{args.writers} writer threads:  {many:8.0f} steps/s  ({nm} steps, {db_mb:.0f} MB file)")
    print(f"{args.writers} writers / 1 writer: {many / one:.2f}x")
    print(f"{args.writers} writers / target {TARGET:.0f} steps/s: {many / TARGET:.2f}x  ({'meets' if many >= TARGET else 'misses'} the target)")


if __name__ == "__main__":
    main()
