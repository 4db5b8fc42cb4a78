"""Rounds as records: the gate's rule, decisions that two people cannot both make, a round that
cannot be approved twice, and the report page escaping what people wrote."""

from __future__ import annotations

import threading

import pytest

from planner_runtime.coevolve.gate import gate
from planner_runtime.coevolve.report import render
from planner_runtime.coevolve.rounds import Decision, RoundError, RoundStore, Status


def _group(successes: int, n: int, low: float, high: float) -> dict:
    return {"n": n, "successes": successes, "rate": successes / n, "ci_low": low, "ci_high": high}


BEFORE = {"overall": _group(10, 30, 0.19, 0.51), "tool": _group(6, 10, 0.31, 0.83), "memory": _group(4, 10, 0.17, 0.69),
          "skills": _group(0, 10, 0.0, 0.28), "subagent": {"n": 0, "successes": 0, "rate": None, "ci_low": 0, "ci_high": 0}}


def test_the_gate_needs_a_rise_and_no_category_below_its_interval():
    better = {**BEFORE, "overall": _group(12, 30, 0.25, 0.58), "tool": _group(4, 10, 0.17, 0.69), "skills": _group(2, 10, 0.06, 0.51)}
    verdict = gate(BEFORE, better)
    assert verdict.passed and verdict.before == pytest.approx(1 / 3) and verdict.after == pytest.approx(0.4)
    assert verdict.reasons == ("subagent: not scored in both benches, left out",)

    fell = {**better, "tool": _group(2, 10, 0.06, 0.51)}  # 20% is below tool's [31%, 83%]
    verdict = gate(BEFORE, fell)
    assert not verdict.passed and any(r.startswith("tool fell to 20.0%") for r in verdict.reasons)

    same = {**BEFORE}
    assert gate(BEFORE, same).reasons[0] == "held-out success did not rise: 33.3% against 33.3%"
    assert not gate({}, better).passed


def _deciding(store: RoundStore) -> str:
    round_ = store.new_round("embedded-sft", {"store": "s.sqlite"})
    store.add_proposals(round_.id, [("p1", "skill", "/x/p1.json", "add a pitfall"), ("p2", "recipe", "/x/p2.json", "weigh memory")])
    store.finish_stage(round_.id, "analyze", {"proposals": 2}, status=Status.deciding)
    return round_.id


def test_two_reviewers_deciding_one_proposal_at_once_one_wins_and_the_other_is_told(tmp_path):
    with RoundStore(tmp_path / "rounds.sqlite") as store:
        round_id = _deciding(store)
        assert store.get(round_id).options["release"] == "embedded-sft-r1"
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def decide(who: str, decision: Decision) -> None:
            barrier.wait()
            try:
                store.decide(round_id, "p1", decision, by=who)
                outcomes.append(f"{who}: ok")
            except RoundError as exc:
                outcomes.append(f"{who}: {exc}")

        threads = [threading.Thread(target=decide, args=("ann", Decision.approved)),
                   threading.Thread(target=decide, args=("bo", Decision.rejected))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winner = next(o.split(":")[0] for o in outcomes if o.endswith(": ok"))
        loser = next(o for o in outcomes if not o.endswith(": ok"))
        assert f"already {'approved' if winner == 'ann' else 'rejected'} by {winner}" in loser
        record = next(p for p in store.get(round_id).proposals if p.proposal_id == "p1")
        assert record.decided_by == winner
        assert store.get(round_id).undecided == ["p2"]
        with pytest.raises(RoundError, match="no proposal 'p9'"):
            store.decide(round_id, "p9", Decision.approved, by="ann")
        with pytest.raises(RoundError, match="--by"):
            store.decide(round_id, "p2", Decision.approved, by="  ")
        assert [e[1] for e in store.events(round_id)].count("decide") == 1


def test_a_round_is_approved_once_and_only_when_gated(tmp_path):
    with RoundStore(tmp_path / "rounds.sqlite") as store:
        round_id = _deciding(store)
        with pytest.raises(RoundError, match="can be approved only when gated"):
            store.close_round(round_id, Status.promoted, by="ann", allowed=(Status.gated,))
        store.reopen(round_id, Status.gated, allowed=(Status.deciding,))
        store.close_round(round_id, Status.promoted, by="ann", note="held-out +7 points", allowed=(Status.gated,))
        with pytest.raises(RoundError, match="already promoted by ann"):
            store.close_round(round_id, Status.promoted, by="bo", allowed=(Status.gated,))
        assert store.get(round_id).approved_by == "ann"
        assert store.get("1").id == round_id  # a round answers to its number too
        with pytest.raises(RoundError, match="no round 'nope'"):
            store.get("nope")


def test_the_report_charts_rounds_and_escapes_what_people_wrote(tmp_path):
    with RoundStore(tmp_path / "rounds.sqlite") as store:
        round_id = _deciding(store)
        store.decide(round_id, "p1", Decision.approved, by="<script>alert(1)</script>", note="<img src=x onerror=alert(1)>")
        store.finish_stage(round_id, "bench_test", {"bench": "b1", "categories": BEFORE})
        store.finish_stage(round_id, "bench_after", {"bench": "b2", "categories": {**BEFORE, "overall": _group(12, 30, 0.25, 0.58)}})
        page = render(store.all())
    assert "<script>" not in page and "<img src=x" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page and page.count("<svg") == 2
    assert "33% [19–51%] 10/30" in page and "40% [25–58%] 12/30" in page
    assert "<p>No round yet" in render([])
