"""The episode writes through the ``EpisodeSink`` protocol: the harness loads no SQLite store, an
episode runs against a sink that is not the store, and the store is one."""

from __future__ import annotations

import subprocess
import sys

from planner_runtime.contract import Source, Step, Trajectory, TrajectoryStatus, Usage
from planner_runtime.cost import TokenUsage
from planner_runtime.harness.episode import Episode
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.trajectories.sink import EpisodeSink
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity


def test_the_harness_does_not_import_the_sqlite_store():
    code = ("import sys, planner_runtime.harness.episode, planner_runtime.harness.subagents; "
            "print(sorted(m for m in sys.modules if m.startswith('planner_runtime.trajectories')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "planner_runtime.trajectories.sink" in loaded
    assert "planner_runtime.trajectories.store" not in loaded and "planner_runtime.trajectories.query" not in loaded


class ListSink:
    """Trajectories kept in memory, as a training buffer would keep them."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.trajectories: dict[str, Trajectory] = {}

    def begin(self, traj: Trajectory) -> None:
        self.calls.append("begin")
        self.trajectories[traj.id] = traj

    def append_step(self, trajectory_id: str, step: Step) -> None:
        self.calls.append(f"step {step.index}")
        traj = self.trajectories[trajectory_id]
        self.trajectories[trajectory_id] = traj.model_copy(update={"steps": traj.steps + (step,)})

    def end(self, trajectory_id: str, status: TrajectoryStatus, *, answer: str | None, usage: Usage) -> None:
        self.calls.append(f"end {status.value}")
        traj = self.trajectories[trajectory_id]
        self.trajectories[trajectory_id] = traj.model_copy(update={"status": status, "answer": answer, "usage": usage})

    def get(self, trajectory_id: str) -> Trajectory:
        return self.trajectories[trajectory_id]

    def usage(self, trajectory_id: str) -> TokenUsage:
        return TokenUsage(own=self.trajectories[trajectory_id].usage)


def test_an_episode_runs_against_any_sink(device, device_ref):
    sink = ListSink()
    planner = ScriptedPlanner([{"name": "open_app", "arguments": {"app": "Clock"}}, {"name": "finish", "arguments": {"answer": "open"}}])
    traj = Episode(goal="Open the clock", planner=planner, tools=default_toolset(), ctx=ToolContext(device=device),
                   store=sink, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox)).run()
    assert sink.calls == ["begin", "step 0", "step 1", "end finished"]
    assert traj.answer == "open" and traj.steps[0].feedback.status.value == "ok"
    assert traj.messages_at(1)[-1].content.startswith('{"status": "ok"')  # the input it rebuilt is the harness's


def test_the_store_is_a_sink(tmp_path):
    assert isinstance(TrajectoryStore(tmp_path / "t.sqlite"), EpisodeSink)
