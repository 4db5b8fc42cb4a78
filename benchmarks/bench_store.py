"""Trajectory store: bytes per episode, and write speed (step commits per second, 1 writer against 16).

Bytes: a 10-step episode run through the real harness (scripted planner, the virtual phone behind
the real adb server), each turn's token ids from the embedded model's tokenizer over the rendered
chat, as the local planner returns them. Prints what the store keeps for it side by side: as the
previous release stored it (every step's whole model input, token ids in the JSON) and as it is
stored now (the messages new at each turn, token ids packed with the prompt as a suffix of the
previous turn's) — step records and token ids apart, then the ratio.

Speed: each writer runs its own episodes in one shared store file (WAL), committing every step as
it happens — as parallel collection does. A step is the record the speed figures have always used:
the whole rendered model input (system prompt, goal, earlier turns), raw output, tool call, and
feedback with a compact screen, so the figures stay comparable across releases. Prints steps/s
for 1 and 16 writers side by side, the ratio, and the figure against the target (>= 2,000 steps/s
from 16 writers).

    python benchmarks/bench_store.py --seconds 5 [--bytes-only]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer

from device_farm.adb.device import AdbDevice
from device_farm.adb.server import AdbServer
from device_farm.virtual import VirtualPhone
from planner_runtime.contract import (
    DeviceRef, Feedback, Message, Observation, Role, Source, Step, ToolCall, ToolSpec, Trajectory, TrajectoryStatus,
    TurnTokens, Usage,
)
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.chat_template import render_chat
from planner_runtime.planners.local.model_store import ensure_embedded_model
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity

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


EPISODE_GOAL = "Set an alarm for 7:30, then show me my contacts"
EPISODE = [  # nine calls and the finish: ten steps
    {"name": "open_app", "arguments": {"app": "Clock"}},
    {"name": "read_screen", "arguments": {}},
    {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
    {"name": "back", "arguments": {}},
    {"name": "open_app", "arguments": {"app": "Contacts"}},
    {"name": "scroll", "arguments": {"direction": "down"}},
    {"name": "read_screen", "arguments": {}},
    {"name": "scroll", "arguments": {"direction": "up"}},
    {"name": "home", "arguments": {}},
    {"name": "finish", "arguments": {"answer": "Alarm set for 7:30; your contacts are on screen."}},
]


class TokenizingPlanner:
    """The scripted planner, returning each turn's token ids as the local planner does: the
    rendered chat and the answer through the model's tokenizer, a logprob and mask per token."""

    name = "scripted"
    release = "scripted"

    def __init__(self, script: list[dict], tokenizer: Tokenizer) -> None:
        self.inner, self.tokenizer = ScriptedPlanner(script), tokenizer

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        out = self.inner.plan(messages, tools, sampling=sampling)
        prompt = self.tokenizer.encode(render_chat(messages, tools), add_special_tokens=False).ids
        completion = self.tokenizer.encode(out.text, add_special_tokens=False).ids
        tokens = TurnTokens(prompt_ids=tuple(prompt), completion_ids=tuple(completion), logprobs=tuple(-0.25 - i / 1e3 for i in range(len(completion))),
                            sampled=tuple(i % 3 != 0 for i in range(len(completion))), tokenizer="SmolLM2-135M-Instruct")
        return out.model_copy(update={"tokens": tokens})


def episode_bytes(tmp: Path) -> tuple[dict[str, int], dict[str, int], int]:
    """(before, after, steps): bytes of step records and of token ids for one 10-step episode."""
    tokenizer = Tokenizer.from_file(str(ensure_embedded_model() / "tokenizer.json"))
    path = tmp / "bytes.sqlite"
    with VirtualPhone() as phone, AdbServer() as server:
        serial = server.connect_device(phone.address)
        device = AdbDevice(serial, adb_host=server.host, adb_port=server.port)
        device.connect()
        try:
            with TrajectoryStore(path) as store:
                traj = run_goal(EPISODE_GOAL, device=device, identity=EpisodeIdentity(device=DeviceRef(serial=serial, model="virtual"), source=Source.sandbox), planner=TokenizingPlanner(EPISODE, tokenizer), store=store)
        finally:
            device.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT length(record), length(tokens) FROM steps WHERE trajectory_id = ?", (traj.id,)).fetchall()
    after = {"records": sum(r for r, _ in rows), "tokens": sum(t or 0 for _, t in rows)}
    # what the previous release's store wrote: the step as JSON, whole input and token ids in it
    old = [step.model_copy(update={"messages": traj.messages_at(i), "tokens": None}).model_dump_json(exclude={"messages_new"})
           for i, step in enumerate(traj.steps)]
    old_tokens = [len(step.tokens.model_dump_json()) + len(',"tokens":') for step in traj.steps if step.tokens is not None]
    before = {"records": sum(len(r) - len(',"tokens":null') for r in old), "tokens": sum(old_tokens)}
    return before, after, len(traj.steps)


def print_bytes(before: dict[str, int], after: dict[str, int], steps: int) -> None:
    print(f"bytes per {steps}-step episode        whole input per step   new messages only   before / after")
    for label, key in (("step records (messages, output, feedback)", "records"), ("token ids (prompt, completion, logprobs)", "tokens")):
        print(f"  {label:42s} {before[key] / 1000:8.1f} kB {after[key] / 1000:18.1f} kB {before[key] / max(after[key], 1):12.1f}x")
    b, a = sum(before.values()), sum(after.values())
    print(f"  {'total':42s} {b / 1000:8.1f} kB {a / 1000:18.1f} kB {b / a:12.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--bytes-only", action="store_true", help="Measure bytes per episode only, not write speed.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print_bytes(*episode_bytes(Path(tmp)))
    if args.bytes_only:
        return
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
