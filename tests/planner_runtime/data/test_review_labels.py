"""The review queue's final labels: a reject keeps a trajectory out, a relabel replaces the
verifier's success, open items are pending, and a store from schema 2 opens with the new tables."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert

from planner_runtime.contract import DeviceRef, Source, Trajectory, utcnow
from planner_runtime.data.review.labels import Resolution, final_labels, pending
from planner_runtime.trajectories.schema import review_items
from planner_runtime.trajectories.store import TrajectoryStore


def _trajectory(store: TrajectoryStore, tid: str) -> None:
    store.begin(Trajectory(id=tid, goal="g", source=Source.sandbox, device=DeviceRef(serial="s"), planner="scripted",
                           planner_release="r", harness_release="h"))


def _item(conn, tid: str, reason: str, status: str, resolution: str | None = None, label: bool | None = None, at: int = 0):
    now = utcnow()
    conn.execute(insert(review_items).values(
        id=f"{tid}-{reason}", trajectory_id=tid, reason=reason, detail="", priority=0, status=status,
        required_reviews=1, resolution=resolution, label_success=label, created_at=now,
        resolved_at=now + timedelta(seconds=at) if status == "resolved" else None))


def test_reject_wins_relabel_replaces_success_and_open_items_are_pending(tmp_path):
    with TrajectoryStore(tmp_path / "s.sqlite") as store:
        for tid in ("a", "b", "c", "d", "e"):
            _trajectory(store, tid)
        with store.engine.begin() as conn:
            _item(conn, "a", "safety", "resolved", "reject", at=0)
            _item(conn, "a", "conflict", "resolved", "approve", at=1)  # a later approve never lifts a reject
            _item(conn, "b", "low_confidence", "resolved", "relabel", False, at=0)
            _item(conn, "b", "safety", "resolved", "approve", at=1)  # nor drops a relabel
            _item(conn, "c", "safety", "resolved", "approve")
            _item(conn, "d", "conflict", "open")
        with store.engine.connect() as conn:
            labels = final_labels(conn)
            waiting = pending(conn)
    assert set(labels) == {"a", "b", "c"}
    assert labels["a"].excluded and labels["a"].reasons == ("safety", "conflict")
    assert (labels["b"].resolution, labels["b"].success) == (Resolution.relabel, False)
    assert (labels["c"].resolution, labels["c"].success, labels["c"].excluded) == (Resolution.approve, None, False)
    assert waiting == {"d": ("conflict",)}
