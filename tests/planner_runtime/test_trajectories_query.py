"""Finding trajectories in the store: by task, outcome, failure kind, planner, releases, source,
collection and date — through the store's API and `planner-agent trajectories list`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from planner_runtime.contract import (
    Check, DeviceRef, FailureKind, Feedback, FeedbackStatus, Source, Step, ToolCall, Trajectory, TrajectoryStatus, Usage,
    Verdict,
)
from planner_runtime.trajectories.query import Filter
from planner_runtime.trajectories.store import TrajectoryStore

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def _write(store: TrajectoryStore, *, task: str | None, success: bool | None, kind: FailureKind | None = None,
           planner: str = "scripted", release: str = "p1", harness: str = "h1", source: Source = Source.sandbox,
           day: int = 0, steps: int = 2, collection: str | None = None) -> str:
    traj = Trajectory(goal=f"goal of {task}", task_id=task, source=source, device=DeviceRef(serial="emulator-5554"),
                      planner=planner, planner_release=release, harness_release=harness, collection=collection,
                      started_at=T0 + timedelta(days=day))
    store.begin(traj)
    for i in range(steps):
        call = ToolCall(name="read_screen")
        store.append_step(traj.id, Step(index=i, messages=(), raw_output="", tool_call=call,
                                        feedback=Feedback(call_id=call.call_id, status=FeedbackStatus.ok)))
    store.end(traj.id, TrajectoryStatus.finished, answer="done", usage=Usage(prompt_tokens=10 * steps, completion_tokens=steps))
    if success is not None:
        store.set_verdict(traj.id, Verdict(success=success, score=1.0 if success else 0.0,
                                           checks=(Check(name="c", passed=success),), failure_kind=kind))
    return traj.id


@pytest.fixture
def filled(tmp_path):
    path = tmp_path / "t.sqlite"
    with TrajectoryStore(path) as store:
        ids = {
            "ok": _write(store, task="clock.set_alarm", success=True, day=0),
            "agent": _write(store, task="clock.set_alarm", success=False, kind=FailureKind.agent, day=1, release="p2"),
            "infra": _write(store, task="contacts.add_contact", success=False, kind=FailureKind.infra, day=2,
                            source=Source.real, collection="coll_a"),
            "local": _write(store, task="contacts.add_contact", success=True, planner="local", harness="h2", day=3,
                            steps=5, collection="coll_a"),
            "free": _write(store, task=None, success=None, day=4, steps=1),
        }
        yield store, path, ids


def test_store_filters_each_field(filled):
    store, _, ids = filled

    def q(**kw):
        return [r.id for r in store.query(Filter(**kw))]

    assert q() == list(ids.values())  # oldest first
    assert q(task_id="clock.set_alarm") == [ids["ok"], ids["agent"]]
    assert q(success=False) == [ids["agent"], ids["infra"]]  # the unverified one is neither
    assert q(success=True) == [ids["ok"], ids["local"]]
    assert q(failure_kind="infra") == [ids["infra"]]
    assert q(failure_kind=FailureKind.agent) == [ids["agent"]]
    assert q(planner="local") == [ids["local"]]
    assert q(planner_release="p2") == [ids["agent"]]
    assert q(harness_release="h2") == [ids["local"]]
    assert q(source="real") == [ids["infra"]] and q(source=Source.sandbox) == [ids["ok"], ids["agent"], ids["local"], ids["free"]]
    assert q(collection="coll_a") == [ids["infra"], ids["local"]]
    assert q(since=T0 + timedelta(days=1), until=T0 + timedelta(days=3)) == [ids["agent"], ids["infra"]]
    assert q(since=datetime(2026, 3, 3, 12, 0)) == [ids["infra"], ids["local"], ids["free"]]  # naive = UTC
    assert q(task_id="contacts.add_contact", success=True, source="sandbox") == [ids["local"]]
    assert list(store.ids(success=False, source="real")) == [ids["infra"]]


def test_summary_rows_carry_counts_and_outcome(filled):
    store, _, ids = filled
    newest_two = store.query(limit=2)
    assert [r.id for r in newest_two] == [ids["local"], ids["free"]]
    local = newest_two[0]
    assert (local.steps, local.prompt_tokens, local.completion_tokens, local.success) == (5, 50, 5, True)
    assert local.started_at == T0 + timedelta(days=3) and local.ended_at is not None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "trajectories", "list", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_lists_and_filters(filled):
    _, path, ids = filled
    res = _cli("--store", str(path), "--failed", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["id"] for r in rows] == [ids["agent"]]  # an infra fault is no failure of the planner's
    assert [r["outcome"] for r in rows] == ["failed (agent)"]
    res = _cli("--store", str(path), "--failure-kind", "agent", "--planner", "scripted", "--since", "2026-03-02", "--json")
    assert [r["id"] for r in json.loads(res.stdout)] == [ids["agent"]]
    res = _cli("--store", str(path), "--source", "sandbox", "--until", "2026-03-02")
    assert res.returncode == 0 and ids["ok"] in res.stdout and ids["agent"] not in res.stdout
    assert "1 trajectories: 1 succeeded, 0 failed" in res.stdout
    res = _cli("--store", str(path), "--task", "no.such.task")
    assert res.returncode == 0 and "no trajectories match" in res.stdout
    res = _cli("--store", str(path), "--failure-kind", "cosmic")
    assert res.returncode == 2 and "must be one of agent, infra, spec" in res.stderr


def test_failed_leaves_out_infra_faults_and_infra_lists_them(filled):
    store, path, ids = filled
    dropped = Trajectory(goal="goal of clock.set_alarm", task_id="clock.set_alarm", source=Source.real,
                         device=DeviceRef(serial="emulator-5554"), planner="scripted", started_at=T0 + timedelta(days=5))
    store.begin(dropped)
    store.end(dropped.id, TrajectoryStatus.infra_error, answer=None, usage=Usage())  # the phone went away: no verdict
    assert list(store.ids(success=False, infra=False)) == [ids["agent"]]
    assert list(store.ids(infra=True)) == [ids["infra"], dropped.id]
    assert len(list(store.ids(infra=False))) == 4  # unverified and successful episodes are no infra faults

    failed = _cli("--store", str(path), "--failed", "--json")
    assert failed.returncode == 0, failed.stderr
    assert [r["id"] for r in json.loads(failed.stdout)] == [ids["agent"]]
    infra = _cli("--store", str(path), "--infra", "--json")
    assert infra.returncode == 0, infra.stderr
    assert [(r["id"], r["outcome"]) for r in json.loads(infra.stdout)] == [(ids["infra"], "failed (infra)"),
                                                                          (dropped.id, "infra_error")]
    asked = _cli("--store", str(path), "--failed", "--failure-kind", "infra", "--json")  # asked for by name: shown
    assert [r["id"] for r in json.loads(asked.stdout)] == [ids["infra"]]
    both = _cli("--store", str(path), "--failed", "--infra")
    assert both.returncode == 2 and "exclude each other" in both.stderr
