"""Trajectory store on a real SQLite file: steps committed as they happen, crashes marked."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from planner_runtime.contract import (
    DeviceRef,
    Feedback,
    Message,
    Step,
    ToolCall,
    Trajectory,
    TrajectoryStatus,
    Usage,
    Verdict,
)
import pytest

from planner_runtime.trajectories.store import TrajectoryStore


def _step(i: int) -> Step:
    call = ToolCall(name="tap", arguments={"element": i})
    return Step(
        index=i,
        messages=(Message(role="user", content="go"),),
        raw_output="x",
        tool_call=call,
        feedback=Feedback.ok(call.call_id, {"i": i}),
        usage=Usage(prompt_tokens=3, completion_tokens=1),
    )


def _header() -> Trajectory:
    return Trajectory(goal="g", source="sandbox", device=DeviceRef(serial="s"), planner="scripted", task_id="t1")


def test_write_read_and_query(tmp_path):
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        head = _header()
        store.begin(head)
        for i in range(3):
            store.append_step(head.id, _step(i))
        store.end(head.id, TrajectoryStatus.finished, answer="done", usage=Usage(prompt_tokens=9, completion_tokens=3))
        store.set_verdict(head.id, Verdict(success=False, score=0.5, failure_kind="agent"))
        traj = store.get(head.id)
        assert [s.index for s in traj.steps] == [0, 1, 2]
        assert traj.steps[1].tool_call.arguments == {"element": 1}
        assert traj.status is TrajectoryStatus.finished and traj.answer == "done"
        assert traj.verdict.failure_kind == "agent" and traj.usage.prompt_tokens == 9
        assert list(store.ids(task_id="t1", success=False)) == [head.id]
        assert list(store.ids(success=True)) == []


def test_store_uses_wal(tmp_path):
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_kill_9_mid_episode_keeps_committed_steps_and_reads_interrupted(tmp_path):
    path = tmp_path / "t.sqlite"
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from tests.planner_runtime.test_trajectories import _header, _step
        from planner_runtime.trajectories.store import TrajectoryStore
        store = TrajectoryStore({str(path)!r}).open()
        head = _header()
        store.begin(head)
        store.append_step(head.id, _step(0))
        store.append_step(head.id, _step(1))
        print(head.id, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    traj_id = proc.stdout.readline().strip()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.05)
    with TrajectoryStore(path) as store:
        traj = store.get(traj_id)
    assert traj.status is TrajectoryStatus.interrupted
    assert [s.index for s in traj.steps] == [0, 1]


def test_tool_specs_are_kept_with_the_trajectory(tmp_path):
    from planner_runtime.contract import ToolSpec

    spec = ToolSpec(name="tap", description="Tap", parameters={"type": "object", "properties": {"element": {"type": "integer"}}})
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        head = _header().model_copy(update={"tools": (spec,)})
        store.begin(head)
        assert store.get(head.id).tools == (spec,)


def test_a_store_from_an_older_release_gains_new_columns(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the trajectories table as the first release wrote it, without `tools`
        db.execute(
            "CREATE TABLE trajectories (id VARCHAR PRIMARY KEY, task_id VARCHAR, goal TEXT NOT NULL, source VARCHAR NOT NULL,"
            " device JSON NOT NULL, planner VARCHAR NOT NULL, planner_release VARCHAR NOT NULL, harness_release VARCHAR NOT NULL,"
            " status VARCHAR NOT NULL, answer TEXT, success BOOLEAN, failure_kind VARCHAR, verdict JSON,"
            " prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, started_at DATETIME NOT NULL,"
            " ended_at DATETIME, writer VARCHAR NOT NULL)"
        )
    with TrajectoryStore(path) as store:
        head = _header()
        store.begin(head)
        assert store.get(head.id).tools == ()


def test_a_store_opened_for_reading_is_never_created(tmp_path):
    from planner_runtime.errors import StoreNotFound

    typo = tmp_path / "typo.sqlite"
    with pytest.raises(StoreNotFound, match="no trajectory store at"):
        TrajectoryStore(typo, create=False).open()
    assert not typo.exists()
    with TrajectoryStore(tmp_path / "s.sqlite"):
        pass
    with TrajectoryStore(tmp_path / "s.sqlite", create=False) as db:
        assert db.path.exists()


def test_an_item_cut_off_before_its_verdict_is_not_done(tmp_path):
    def item(key: str, *, task: str | None = "t1", verdict: Verdict | None = None, status=TrajectoryStatus.finished) -> None:
        head = _header().model_copy(update={"task_id": task, "collection": "coll_a", "item": key})
        store.begin(head)
        store.end(head.id, status, answer="done", usage=Usage())
        if verdict is not None:
            store.set_verdict(head.id, verdict)

    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        item("judged#0", verdict=Verdict(success=False, score=0.0, failure_kind="agent"))
        item("passed#0", verdict=Verdict(success=True, score=1.0))
        item("verifying#0")  # the episode finished, the process died while its checks ran
        item("infra#0", verdict=Verdict(success=False, score=0.0, failure_kind="infra"))
        item("goal#0", task=None)  # no task: a finished episode is all there is to judge
        item("truncated goal#0", task=None, status=TrajectoryStatus.truncated)
        assert store.completed_items("coll_a") == {"judged#0", "passed#0", "goal#0"}
