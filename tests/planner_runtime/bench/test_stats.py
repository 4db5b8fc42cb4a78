"""The bench's statistics as pure functions: the Wilson interval's bounds and groups that are
empty, all successes, or whose every item was an infra fault (so none is scored)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_runtime.bench.stats import Outcome, by, by_category, summarize, wilson

counts = st.integers(min_value=0, max_value=5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


def outcome(success: bool, category: str = "tool", domain: str = "clock", dollars: float | None = 0.002, **more) -> Outcome:
    return Outcome(item=more.get("item", "t#0"), task_id="t", category=category, domain=domain, difficulty="easy",
                   success=success, steps=more.get("steps", 3), prompt_tokens=1000, output_tokens=50, dollars=dollars,
                   seconds=1.5)


@given(counts)
def test_the_interval_is_inside_0_1_and_holds_the_observed_rate(c):
    k, n = c
    low, high = wilson(k, n)
    assert 0.0 <= low <= high <= 1.0
    if n:
        assert low <= k / n <= high
        assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)


@given(st.integers(1, 200), st.integers(1, 200), st.integers(2, 10))
def test_more_of_the_same_evidence_narrows_the_interval(k, extra, times):
    n = k + extra
    low, high = wilson(k, n)
    low2, high2 = wilson(k * times, n * times)
    assert high2 - low2 < high - low


def test_known_values_and_an_empty_group():
    assert wilson(3, 4) == pytest.approx((0.3006, 0.9544), abs=1e-4)
    assert wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)  # no evidence: the interval says nothing
    with pytest.raises(ValueError):
        wilson(5, 4)


@given(st.integers(1, 300))
def test_all_successes(n):
    g = summarize([outcome(True) for _ in range(n)])
    assert (g.n, g.successes, g.rate, g.ci_high) == (n, n, 1.0, 1.0)
    assert 0.0 < g.ci_low < 1.0  # never certain from a finite sample
    assert g.usd_per_1k == pytest.approx(2.0) and g.steps == 3


def test_a_group_whose_every_item_was_infra_is_empty_not_zero():
    # infra items have no outcome: a category with only such items is listed with n = 0, no rate
    cats = by_category([outcome(True, "tool"), outcome(False, "tool")])
    assert (cats["overall"].n, cats["overall"].rate) == (2, 0.5)
    for empty in ("memory", "skills", "subagent"):
        g = cats[empty]
        assert (g.n, g.rate, g.steps, g.usd_per_1k, g.ci_low, g.ci_high) == (0, None, None, None, 0.0, 1.0)
    nothing = by_category([])  # a planner whose every attempt was infra
    assert all(g.n == 0 and g.rate is None for g in nothing.values())
    domains = by([], lambda o: o.domain, ["clock", "contacts"])
    assert set(domains) == {"clock", "contacts"} and all(g.n == 0 for g in domains.values())


def test_an_unpriced_planner_has_no_dollar_figure():
    g = summarize([outcome(True), outcome(False, dollars=None)])
    assert g.usd_per_1k is None and g.prompt_tokens == 1000
