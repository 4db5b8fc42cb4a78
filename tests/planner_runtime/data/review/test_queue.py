"""Deciding items: leases (exclusive under concurrent threads on one file, lapsing), the
two-reviewer rule, every decision kept, the final labels the data builder reads, and one clear
error for each bad request."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from planner_runtime.contract import DeviceRef, Source, Trajectory, TrajectoryStatus, Usage, Verdict
from planner_runtime.data.review import queue
from planner_runtime.data.review.errors import AlreadyResolved, AlreadyReviewed, LeaseHeld, ReviewError, UnknownItem
from planner_runtime.data.review.labels import Resolution, final_labels
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.trajectories.store import TrajectoryStore


def _episode(store: TrajectoryStore, tid: str, success: bool | None = True) -> None:
    store.begin(Trajectory(id=tid, goal=f"goal {tid}", source=Source.sandbox, device=DeviceRef(serial="s"), planner="scripted"))
    store.end(tid, TrajectoryStatus.finished, answer="done", usage=Usage())
    if success is not None:
        store.set_verdict(tid, Verdict(success=success, score=1.0 if success else 0.0))


@pytest.fixture
def queued(tmp_path):
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        ids = {}
        for n, reason in enumerate(("safety", "conflict", "low_confidence", "manual")):
            _episode(store, f"t{n}", success=n % 2 == 0)
            ids[reason] = queue.add(store, f"t{n}", reason, f"because {n}").id
        yield store, ids


def test_an_approve_or_reject_that_agrees_with_the_verifier_resolves_with_one_review(queued):
    store, ids = queued
    done = queue.decide(store, ids["safety"], "alice", "approve", note="fine")
    assert done.resolved and (done.item.status, done.item.resolution, done.item.label_success) == ("resolved", "approve", None)
    assert queue.decide(store, ids["conflict"], "alice", "reject").resolved
    with store.engine.connect() as conn:
        labels = final_labels(conn)
    assert labels["t0"].resolution is Resolution.approve and labels["t1"].excluded
    kept = queue.decisions(store, ids["safety"])
    assert [(d.reviewer, d.decision, d.note) for d in kept] == [("alice", "approve", "fine")] and kept[0].decided_at


def test_a_relabel_needs_a_second_agreeing_reviewer_and_every_decision_is_kept(queued):
    store, ids = queued
    item = ids["safety"]  # t0: the verifier said success
    first = queue.decide(store, item, "alice", "relabel", label=False, note="the alarm is at 8")
    assert not first.resolved and first.item.required_reviews == 2 and first.item.status == "open"
    with pytest.raises(AlreadyReviewed, match="alice already reviewed"):
        queue.decide(store, item, "alice", "relabel", label=False)  # the same person cannot count twice
    with pytest.raises(AlreadyReviewed):  # nor hold it while it waits for someone else (opening its page again)
        queue.lease(store, item, "alice")
    assert queue.get(store, item).lease_by is None
    disagree = queue.decide(store, item, "bob", "approve", note="looks right to me")
    assert not disagree.resolved  # one for each: still open
    with store.engine.connect() as conn:
        assert "t0" not in final_labels(conn)
    last = queue.decide(store, item, "carol", "relabel", label=False)
    assert last.resolved and (last.item.resolution, last.item.label_success, last.item.reviews) == ("relabel", False, 3)
    assert [(d.reviewer, d.decision, d.label_success) for d in queue.decisions(store, item)] == [
        ("alice", "relabel", False), ("bob", "approve", None), ("carol", "relabel", False)]
    with store.engine.connect() as conn:
        label = final_labels(conn)["t0"]
    assert (label.resolution, label.success) == (Resolution.relabel, False)
    with pytest.raises(AlreadyResolved, match="already resolved \\(relabel as failure"):
        queue.decide(store, item, "dave", "approve")


def test_a_second_decision_against_the_first_asks_for_a_third(queued):
    store, ids = queued
    item = ids["conflict"]  # t1: the verifier said failure
    assert queue.decide(store, item, "alice", "approve").resolved  # agrees with the verifier: resolved at once
    item = ids["manual"]
    queue.decide(store, item, "alice", "relabel", label=True)  # against the verifier
    opposed = queue.decide(store, item, "bob", "reject")
    assert not opposed.resolved and opposed.item.required_reviews == 2
    assert queue.decide(store, item, "carol", "reject").item.resolution == "reject"


def test_leases_keep_others_out_until_they_lapse(queued):
    store, ids = queued
    first = queue.take(store, "alice", 0.3)
    assert first.id == ids["safety"] and first.leased_to() == "alice"
    assert queue.take(store, "alice", 0.3).id == first.id  # she gets back what she holds
    assert queue.take(store, "bob", 0.3).id == ids["conflict"]  # the next priority, not hers
    with pytest.raises(LeaseHeld, match="leased by alice"):
        queue.decide(store, first.id, "bob", "approve")
    with pytest.raises(LeaseHeld):
        queue.lease(store, first.id, "bob")
    time.sleep(0.35)
    assert queue.get(store, first.id).leased_to() is None
    assert queue.decide(store, first.id, "bob", "approve").resolved  # a lapsed lease is free
    queue.release(store, ids["conflict"], "bob")
    assert queue.get(store, ids["conflict"]).lease_by is None
    assert queue.take(store, "bob", reason="manual").id == ids["manual"]


def test_four_reviewer_threads_never_share_an_item_and_lose_no_decision(tmp_path):
    path = tmp_path / "t.sqlite"
    with TrajectoryStore(path) as store:
        for n in range(60):
            _episode(store, f"t{n}")
            queue.add(store, f"t{n}", "manual")
    taken: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def reviewer(name: str) -> None:
        got = taken.setdefault(name, [])
        try:
            with TrajectoryStore(path, create=False) as mine:  # an engine of its own, like another process
                while (item := queue.take(mine, name, 30)) is not None:
                    got.append(item.id)
                    queue.decide(mine, item.id, name, "approve")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reviewer, args=(f"r{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    everyone = [i for got in taken.values() for i in got]
    assert len(everyone) == len(set(everyone)) == 60
    with TrajectoryStore(path, create=False) as store:
        made = queue.decisions(store)
        assert len(made) == 60 and len({d.item_id for d in made}) == 60
        assert Counter(d.reviewer for d in made) == Counter({name: len(got) for name, got in taken.items() if got})
        assert {i.status for i in queue.items(store)} == {"resolved"}


@pytest.mark.parametrize("call, error, message", [
    (lambda s, i: queue.decide(s, "rev_nope", "alice", "approve"), UnknownItem, "no review item 'rev_nope'"),
    (lambda s, i: queue.decide(s, i, "alice", "maybe"), ReviewError, "unknown decision 'maybe': approve, reject or relabel"),
    (lambda s, i: queue.decide(s, i, "alice", "relabel"), ReviewError, "relabel needs the label: success or failure"),
    (lambda s, i: queue.decide(s, i, "alice", "approve", label=True), ReviewError, "approve takes no label"),
    (lambda s, i: queue.decide(s, i, "  ", "approve"), ReviewError, "a reviewer name is required"),
    (lambda s, i: queue.take(s, ""), ReviewError, "a reviewer name is required"),
    (lambda s, i: queue.items(s, reason="boredom"), ReviewError, "unknown reason 'boredom'"),
    (lambda s, i: queue.add(s, "t-missing"), UnknownItem, "no trajectory 't-missing'"),
])
def test_bad_requests_are_one_clear_error_and_change_nothing(queued, call, error, message):
    store, ids = queued
    with pytest.raises(error, match=message) as raised:
        call(store, ids["safety"])
    assert isinstance(raised.value, PlannerRuntimeError)
    assert queue.decisions(store) == [] and {i.status for i in queue.items(store)} == {"open"}
