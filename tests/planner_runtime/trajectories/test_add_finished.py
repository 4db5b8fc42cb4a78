"""An episode that ran elsewhere (a device host of a Ray cluster) is stored whole in one go: its
steps with their token ids, its end and verdict, its sub-agents' episodes; storing it twice
changes nothing."""

from __future__ import annotations

import sqlite3

from planner_runtime.contract import Check, DeviceRef, FailureKind, Source, Trajectory, TrajectoryStatus, Usage, Verdict
from planner_runtime.trajectories.store import TrajectoryStore

from tests.planner_runtime.trajectories.test_token_storage import _chat, _step


def _ran_elsewhere(path) -> tuple[Trajectory, Trajectory]:
    """A finished, judged episode with token records and a sub-agent, as the host's store reads it back."""
    records = _chat(4)
    parent = Trajectory(goal="g", task_id="t", source=Source.sandbox, device=DeviceRef(serial="127.0.0.1:40001"),
                        planner="local", collection="coll_a", item="t#0")
    child = Trajectory(goal="sub", source=Source.sandbox, device=parent.device, planner="local", parent=parent.id)
    with TrajectoryStore(path) as store:
        for traj, steps in ((parent, [records[0], None, records[1], records[2]]), (child, [records[3]])):
            store.begin(traj)
            for i, tokens in enumerate(steps):
                store.append_step(traj.id, _step(i, tokens))
            store.end(traj.id, TrajectoryStatus.finished, answer="done", usage=Usage(prompt_tokens=90, completion_tokens=9))
        store.set_verdict(parent.id, Verdict(success=False, score=0.5, failure_kind=FailureKind.agent,
                                             checks=(Check(name="alarm set", passed=False, evidence="no alarm"),)))
        return store.get(parent.id), store.get(child.id)


def test_a_finished_episode_and_its_subagent_are_stored_whole_and_only_once(tmp_path):
    parent, child = _ran_elsewhere(tmp_path / "host.sqlite")
    shipped = [Trajectory.from_json(t.to_json()) for t in (parent, child)]  # as it travels from the host
    with TrajectoryStore(tmp_path / "one.sqlite") as store:
        assert store.add_finished(shipped[0], shipped[1:]) is True
        assert store.get(parent.id) == parent and store.get(child.id) == child  # tokens, verdict, end, usage alike
        assert store.children(parent.id) == [child.id]
        assert store.completed_items("coll_a") == {"t#0"}
        assert store.add_finished(shipped[0], shipped[1:]) is False  # a result delivered twice counts once
    with sqlite3.connect(tmp_path / "one.sqlite") as db:
        assert db.execute("SELECT count(*) FROM trajectories").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM steps").fetchone() == (5,)
        assert db.execute("SELECT count(*) FROM steps WHERE tokens IS NOT NULL").fetchone() == (4,)  # packed, not JSON
