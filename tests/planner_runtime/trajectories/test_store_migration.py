"""Stores written by the previous release still open, read and take new episodes.

``store_e73d568.sql`` is the dump of a store that release's own code wrote (commit e73d568: a
task run with a sub-agent, verified, and a free-form run with a bad tool call), rebuilt here into
a real SQLite file: its schema exactly as that code created it, its rows as it wrote them (each
step holding its whole model input, no token column, no schema version)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from planner_runtime.contract import Message, Source, TurnTokens
from planner_runtime.errors import StoreError
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.trajectories.query import Filter
from planner_runtime.trajectories.schema import VERSION
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity

DUMP = Path(__file__).with_name("store_e73d568.sql")
PARENT, CHILD, FREE = "traj_bc55ad025dca46f4", "traj_236b6a428e454e53", "traj_a4ba1d1fd30343f7"


@pytest.fixture
def old_store(tmp_path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(DUMP.read_text())
    return path


def _raw(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def test_a_store_the_previous_release_wrote_opens_and_reads_as_it_was(old_store):
    old_inputs = {(t, i): tuple(Message.model_validate(m) for m in json.loads(r)["messages"])
                  for t, i, r in _raw(old_store, "SELECT trajectory_id, idx, record FROM steps")}
    assert _raw(old_store, "PRAGMA user_version") == [(0,)]
    with TrajectoryStore(old_store, create=False) as store:
        parent, free = store.get(PARENT), store.get(FREE)
        assert parent.verdict.success and parent.status.value == "finished" and store.children(PARENT) == [CHILD]
        assert [s.tool_call.name for s in free.steps] == ["read_screen", "no_such_tool", "open_app", "finish"]
        assert free.steps[1].feedback.error.code.value == "unknown_tool"
        for traj in (parent, free, store.get(CHILD)):
            for i, step in enumerate(traj.steps):
                assert not step.messages_new and traj.messages_at(i) == old_inputs[traj.id, i]
        assert store.usage(PARENT).subagent_episodes == 1 and store.usage(PARENT).total.prompt_tokens == 4376
        assert {s.id: s.steps for s in store.query(Filter())} == {PARENT: 3, CHILD: 2, FREE: 4}
    assert _raw(old_store, "PRAGMA user_version") == [(VERSION,)]
    assert "tokens" in {row[1] for row in _raw(old_store, "PRAGMA table_info(steps)")}


def test_a_migrated_store_takes_new_episodes_beside_the_old_ones(old_store, device, device_ref):
    with TrajectoryStore(old_store, create=False) as store:
        new = run_goal("Open the clock", device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox),
                       planner=ScriptedPlanner([{"name": "open_app", "arguments": {"app": "Clock"}}]), store=store)
    with TrajectoryStore(old_store, create=False) as store:
        again = store.get(new.id)
        assert again.steps[1].messages_new and again.messages_at(1) == new.messages_at(1)
        assert len(store.get(FREE).steps) == 4 and len(list(store.ids())) == 4


def test_a_store_from_a_newer_release_is_refused_in_one_line(old_store, tmp_path):
    with sqlite3.connect(old_store) as db:
        db.execute(f"PRAGMA user_version = {VERSION + 1}")
    with pytest.raises(StoreError, match="newer release"):
        TrajectoryStore(old_store, create=False).open()
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "trajectories", "list", "--store", str(old_store)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "newer release" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert _raw(old_store, "SELECT count(*) FROM steps") == [(9,)]  # untouched


def test_token_ids_round_trip_in_a_migrated_store(old_store):
    from planner_runtime.contract import DeviceRef, Feedback, Role, Step, ToolCall, Trajectory, TrajectoryStatus, Usage

    tokens = TurnTokens(prompt_ids=tuple(range(500)), completion_ids=(7, 8, 9), logprobs=(-0.1, -0.2, -0.3), sampled=(True, False, True))
    call = ToolCall(name="read_screen")
    traj = Trajectory(goal="g", source=Source.sandbox, device=DeviceRef(serial="emulator-5554"), planner="local")
    with TrajectoryStore(old_store, create=False) as store:
        store.begin(traj)
        store.append_step(traj.id, Step(index=0, messages=(Message(role=Role.user, content="hi"),), messages_new=True, raw_output="",
                                        tool_call=call, feedback=Feedback.ok(call.call_id), tokens=tokens))
        store.end(traj.id, TrajectoryStatus.finished, answer=None, usage=Usage())
        assert store.get(traj.id).steps[0].tokens == tokens
