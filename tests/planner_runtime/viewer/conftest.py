"""Fixtures for the review app's tests: a store of cheap episodes whose screen text and model
output are hostile, each with a stopped payment (so ``review flag`` queues it), and the app
serving it on a free loopback port."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from planner_runtime.contract import (
    DeviceRef, ErrorCode, Feedback, FeedbackStatus, Message, Observation, Role, Source, Step, ToolCall, ToolError, Trajectory,
    TrajectoryStatus, Usage, Verdict, Check,
)
from planner_runtime.data.review import queue
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.viewer.review.server import ReviewServer

PLANTED = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def add_episode(store: TrajectoryStore, tid: str, *, success: bool, screenshot: str | None = None) -> None:
    """One finished episode: a payment the gate stopped, then a finish; hostile text everywhere."""
    pay = ToolCall(name="pay_bill", arguments={"amount": 40, "memo": PLANTED}, call_id=f"{tid}-1")
    done = ToolCall(name="finish", arguments={"answer": "paid"}, call_id=f"{tid}-2")
    screen = Observation(package="com.bank", screen=f"[1] Button 'Pay' {PLANTED}", digest="d", screenshot=screenshot)
    steps = [
        Step(index=0, messages=(Message(role=Role.user, content=f"Goal: pay {PLANTED}"),), messages_new=False, raw_output=f"I will pay {PLANTED}",
             tool_call=pay, feedback=Feedback(call_id=pay.call_id, status=FeedbackStatus.blocked, observation=screen,
                                              error=ToolError(code=ErrorCode.unsafe_action, hint=f"pay_bill was not run: pay actions need the user's confirmation (memo {PLANTED})"))),
        Step(index=1, messages=(), messages_new=True, raw_output="finish", tool_call=done,
             feedback=Feedback(call_id=done.call_id, status=FeedbackStatus.ok, result={"answer": "paid"})),
    ]
    store.begin(Trajectory(id=tid, task_id="bills.pay", goal=f"Pay the bill {PLANTED}", source=Source.sandbox,
                           device=DeviceRef(serial="emulator-5554"), planner="scripted"))
    for step in steps:
        store.append_step(tid, step)
    store.end(tid, TrajectoryStatus.finished, answer=f"paid {PLANTED}", usage=Usage(prompt_tokens=10, completion_tokens=4))
    store.set_verdict(tid, Verdict(success=success, score=1.0 if success else 0.0,
                                   checks=(Check(name="bill paid", passed=success, evidence=f"balance {PLANTED}"),)))


@pytest.fixture
def review_store(tmp_path) -> Callable[..., Path]:
    """``review_store(n)``: a store of ``n`` episodes (every third a failure), flagged for review."""

    def make(n: int, screenshot: str | None = None) -> Path:
        path = tmp_path / "review.sqlite"
        with TrajectoryStore(path) as store:
            for k in range(n):
                add_episode(store, f"t{k:03d}", success=k % 3 != 0, screenshot=screenshot)
            report = queue.flag(store)
            assert len(report.added) == n
        return path

    return make


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[..., ReviewServer]]:
    """``serve(store_path, **options)``: the review app on a free port, stopped at the end."""
    started: list[ReviewServer] = []

    def start(path: Path, **options) -> ReviewServer:
        server = ReviewServer(path, port=0, artifacts=options.pop("artifacts", tmp_path / "artifacts"), **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
