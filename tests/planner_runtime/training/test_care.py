"""CARE's rewards and advantages against vanilla GRPO: properties over any group and settings
(hypothesis), and worked groups whose numbers can be checked by hand."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_runtime.training.care import (
    Algo, CareSettings, Outcome, Regime, cost, default_floor, regime, score_group,
)

unit = st.floats(min_value=0.0, max_value=1.0)
# weights stop short of 1 by a margin: the ordering property is exact arithmetic's, and a weight
# of 1 - 1e-16 would leave it to rounding
weight = st.floats(min_value=0.0, max_value=0.99)


def outcomes(success: st.SearchStrategy[bool] = st.booleans()) -> st.SearchStrategy[Outcome]:
    return st.builds(Outcome, success=success, progress=unit,
                     steps=st.integers(0, 40), output_tokens=st.integers(0, 3000))


@st.composite
def care_settings(draw: st.DrawFn) -> CareSettings:
    low, high = sorted((draw(unit), draw(unit)))
    return CareSettings(low=low, high=high, progress_weight=draw(weight), cost_weight=draw(weight),
                        step_budget=draw(st.integers(1, 50)), token_budget=draw(st.integers(1, 2000)),
                        floor=draw(st.none() | st.floats(min_value=1e-3, max_value=2.0)))


groups = st.lists(outcomes(), min_size=2, max_size=16)
mixed_groups = groups.filter(lambda g: 0 < sum(o.success for o in g) < len(g))
all_success = st.lists(outcomes(st.just(True)), min_size=2, max_size=16)


@given(groups, care_settings())
def test_care_ranks_every_success_above_every_failure(group, s):
    score = score_group(group, Algo.care, s)
    wins = [a for a, o in zip(score.advantages, group) if o.success]
    losses = [a for a, o in zip(score.advantages, group) if not o.success]
    if wins and losses:
        assert min(wins) > max(losses), score.regime


@given(groups, care_settings(), st.sampled_from(Algo))
def test_advantages_sum_to_zero_and_vanish_when_rewards_are_equal(group, s, algo):
    score = score_group(group, algo, s)
    assert math.fsum(score.advantages) == pytest.approx(0.0, abs=1e-9)
    if len(set(score.rewards)) == 1:
        assert score.advantages == (0.0,) * len(group)


@given(st.integers(2, 16), outcomes(), care_settings(), st.sampled_from(Algo))
def test_identical_episodes_get_zero_advantages(n, outcome, s, algo):
    assert score_group([outcome] * n, algo, s).advantages == (0.0,) * n


@given(mixed_groups)
def test_the_floor_never_shrinks_a_mixed_correctness_group(group):
    s = CareSettings(low=0.0, high=1.0)  # every rate lands in the correctness regime
    score = score_group(group, Algo.care, s)
    assert score.regime is Regime.correctness
    mean, std = statistics.fmean(score.rewards), statistics.pstdev(score.rewards)
    assert score.advantages == pytest.approx([(r - mean) / std for r in score.rewards], rel=1e-9)


@given(all_success, care_settings())
def test_an_all_success_group_stays_small_under_care_but_not_under_grpo(group, s):
    high = min(s.high, 0.99)  # a rate of 1 must land above it
    s = dataclasses.replace(s, low=min(s.low, high), high=high, floor=None)
    care = score_group(group, Algo.care, s)
    assert care.regime is Regime.cost
    spread = s.cost_weight * (max(care.cost) - min(care.cost))
    assert max(abs(a) for a in care.advantages) <= spread / default_floor(len(group)) + 1e-12
    grpo = score_group(group, Algo.grpo, s)
    # any spread well above TRL's 1e-4 is standardised to unit size, however small it is
    if max(grpo.rewards) - min(grpo.rewards) >= 1e-2:
        assert max(abs(a) for a in grpo.advantages) >= 0.6


def test_worked_all_success_group_care_against_grpo():
    s = CareSettings(step_budget=10, token_budget=1000)  # 3 steps and 300 tokens cost 0.30
    group = [Outcome(True, 1.0, 3, tokens) for tokens in (300, 320, 340, 360)]
    care = score_group(group, Algo.care, s)
    assert care.regime is Regime.cost
    assert care.cost == pytest.approx((0.30, 0.31, 0.32, 0.33))
    assert care.rewards == pytest.approx((0.940, 0.938, 0.936, 0.934))
    # divided by the floor (0.433), not by the 0.0022 spread: a nudge, not a verdict
    assert care.advantages == pytest.approx((0.00693, 0.00231, -0.00231, -0.00693), abs=1e-5)
    grpo = score_group(group, Algo.grpo, s)
    assert grpo.regime is None
    assert grpo.advantages == pytest.approx((1.1186, 0.3729, -0.3729, -1.1186), abs=1e-4)


def test_worked_mixed_groups_in_each_regime():
    s = CareSettings()
    fail = Outcome(False, 0.5, 12, 512)
    win = Outcome(True, 1.0, 6, 256)
    progress = score_group([win] + [fail] * 7, Algo.care, s)  # 1/8 < 0.25
    assert progress.regime is Regime.progress
    assert progress.rewards == pytest.approx((1.5,) + (0.25,) * 7)
    correctness = score_group([win, fail, fail, fail], Algo.care, s)  # 1/4 is the boundary
    assert correctness.regime is Regime.correctness
    assert correctness.advantages == pytest.approx((math.sqrt(3),) + (-1 / math.sqrt(3),) * 3)
    costly = score_group([win] * 7 + [fail], Algo.care, s)  # 7/8 > 0.75
    assert costly.regime is Regime.cost
    assert costly.rewards == pytest.approx((0.9,) * 7 + (-0.2,))


@given(unit, care_settings())
def test_regime_follows_the_thresholds(rate, s):
    expected = Regime.progress if rate < s.low else Regime.cost if rate > s.high else Regime.correctness
    assert regime(rate, s) is expected


def test_regime_boundaries_belong_to_correctness():
    s = CareSettings(low=0.25, high=0.75)
    assert [regime(r, s) for r in (0.0, math.nextafter(0.25, 0), 0.25, 0.75, math.nextafter(0.75, 1), 1.0)] == [
        Regime.progress, Regime.progress, Regime.correctness, Regime.correctness, Regime.cost, Regime.cost]


@pytest.mark.parametrize("n", range(2, 65))
def test_default_floor_is_the_std_of_a_one_success_group(n):
    assert default_floor(n) == pytest.approx(statistics.pstdev([1.0] + [0.0] * (n - 1)), rel=1e-12)


def test_cost_caps_each_half_at_its_budget():
    s = CareSettings(step_budget=10, token_budget=100)
    assert cost(Outcome(True, 1.0, 0, 0), s) == 0.0
    assert cost(Outcome(True, 1.0, 5, 1000), s) == pytest.approx(0.75)
    assert cost(Outcome(True, 1.0, 99, 1000), s) == 1.0


@pytest.mark.parametrize("fields", [
    dict(progress=math.nan), dict(progress=-0.1), dict(progress=1.5), dict(progress=math.inf),
    dict(progress="0.5"), dict(steps=-1), dict(output_tokens=-3), dict(steps=2.5), dict(steps=True),
    dict(success=0.5), dict(success=None),
])
def test_bad_outcomes_are_refused(fields):
    good = dict(success=True, progress=0.5, steps=3, output_tokens=10)
    with pytest.raises(ValueError, match=next(iter(fields))):
        Outcome(**{**good, **fields})


@pytest.mark.parametrize("fields", [
    dict(low=0.8, high=0.2), dict(low=-0.1), dict(high=1.1), dict(low=math.nan),
    dict(progress_weight=1.0), dict(cost_weight=-0.1), dict(cost_weight=math.nan),
    dict(step_budget=0), dict(token_budget=1.5), dict(floor=0.0), dict(floor=-1.0), dict(floor=math.inf),
])
def test_bad_settings_are_refused(fields):
    with pytest.raises(ValueError, match="CARE"):
        CareSettings(**fields)


def test_bad_groups_are_refused():
    one = Outcome(True, 1.0, 1, 1)
    with pytest.raises(ValueError, match="at least 2"):
        score_group([one], Algo.care)
    with pytest.raises(ValueError, match="at least 2"):
        score_group([], Algo.grpo)
    with pytest.raises(ValueError, match="Outcome"):
        score_group([one, (True, 1.0, 1, 1)], Algo.care)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        score_group([one, one], "ppo")
    with pytest.raises(ValueError, match="success rate"):
        regime(math.nan, CareSettings())
    with pytest.raises(ValueError, match="at least 2"):
        default_floor(1)


@settings(max_examples=50)
@given(groups, care_settings())
def test_scores_are_finite_and_components_line_up(group, s):
    for algo in Algo:
        score = score_group(group, algo, s)
        assert all(math.isfinite(x) for x in score.rewards + score.advantages)
        assert score.success == tuple(float(o.success) for o in group)
        assert score.success_rate == pytest.approx(sum(score.success) / len(group))
        assert all(0.0 <= c <= 1.0 for c in score.cost)
