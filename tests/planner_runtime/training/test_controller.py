"""The CARE controllers: each rule fires when its condition holds and not otherwise, moves stay
in bounds and one step long, and the model-backed controller talks to a real HTTP server on
127.0.0.1 that answers well, out of bounds, with garbage, with a 500, slowly, or not at all."""

from __future__ import annotations

import json
import logging
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_runtime.training.care import Algo, CareSettings, Outcome, score_group
from planner_runtime.training.controller import (
    KEYS, Bounds, Change, Controller, LlmController, Range, RuleController, StepStats,
)
from tests.planner_runtime.planners.fake_openai import FakeOpenAI, closed_port_url, raw_reply, text_reply

LOGGER = "planner_runtime.training.controller"


def stats(step: int, rate: float, tokens: float = 200.0, **regimes: int) -> StepStats:
    return StepStats(step=step, success_rate=rate, regimes=regimes or {"correctness": 4},
                     output_tokens_per_episode=tokens, steps_per_episode=5.0)


def run(controller: Controller, window: list[StepStats], s: CareSettings = CareSettings()):
    for one in window:
        controller.observe(one)
    return controller.update(s, window[-1].step)


def test_cost_weight_rises_while_routine_successes_keep_spending_tokens():
    window = [stats(i, 0.9, 300.0, cost=6, correctness=2) for i in range(1, 5)]
    new, changes = run(RuleController(every=4), window)
    assert new.cost_weight == pytest.approx(0.25)
    assert [c.key for c in changes] == ["cost_weight"] and "cost regime" in changes[0].reason


def test_cost_weight_stays_once_tokens_fall():
    window = [stats(i, 0.9, t, cost=6, correctness=2) for i, t in enumerate((300, 300, 270, 260), 1)]
    assert run(RuleController(every=4), window) == (CareSettings(), [])


def test_cost_weight_stays_when_few_groups_are_in_the_cost_regime():
    window = [stats(i, 0.6, 300.0, cost=2, correctness=6) for i in range(1, 5)]
    assert run(RuleController(every=4), window) == (CareSettings(), [])


def test_a_falling_success_rate_lowers_cost_weight_and_never_raises_it():
    window = [stats(i, r, 300.0, cost=6, correctness=2) for i, r in enumerate((0.9, 0.9, 0.7, 0.7), 1)]
    new, changes = run(RuleController(every=4), window)
    assert new.cost_weight == pytest.approx(0.15) and "fell" in changes[0].reason
    at_min = CareSettings(cost_weight=0.0)
    assert run(RuleController(every=4), window, at_min) == (at_min, [])


def test_progress_weight_rises_while_a_struggling_run_does_not_improve():
    window = [stats(i, 0.1, progress=7, correctness=1) for i in range(1, 5)]
    new, changes = run(RuleController(every=4), window)
    assert new.progress_weight == pytest.approx(0.6) and changes[0].key == "progress_weight"


def test_progress_weight_falls_once_the_success_rate_rises_well():
    window = [stats(i, r, progress=7, correctness=1) for i, r in enumerate((0.05, 0.05, 0.15, 0.2), 1)]
    new, changes = run(RuleController(every=4), window)
    assert new.progress_weight == pytest.approx(0.4) and "rose" in changes[0].reason


def test_progress_weight_stays_on_a_small_rise():
    window = [stats(i, r, progress=7, correctness=1) for i, r in enumerate((0.10, 0.10, 0.12, 0.12), 1)]
    assert run(RuleController(every=4), window) == (CareSettings(), [])


def test_moves_stop_at_the_bounds():
    window = [stats(i, 0.9, 300.0, cost=8) for i in range(1, 5)]
    near = CareSettings(cost_weight=0.48)
    new, changes = run(RuleController(every=4), window, near)
    assert new.cost_weight == 0.5 and changes == [Change("cost_weight", 0.48, 0.5, changes[0].reason)]
    at_max = CareSettings(cost_weight=0.5)
    assert run(RuleController(every=4), window, at_max) == (at_max, [])


def test_acts_only_every_n_steps_on_the_window_since_the_last_update():
    controller = RuleController(every=4)
    for step in range(1, 4):
        controller.observe(stats(step, 0.9, 300.0, cost=8))
        assert controller.update(CareSettings(), step) == (CareSettings(), [])
    controller.observe(stats(4, 0.9, 300.0, cost=8))
    new, changes = controller.update(CareSettings(), 4)
    assert len(changes) == 1
    controller.observe(stats(5, 0.9, 300.0, cost=8))
    assert controller.update(new, 5) == (new, [])  # the next window only opened at step 4


def test_a_window_of_one_step_changes_nothing():
    controller = RuleController(every=2)
    controller.observe(stats(2, 0.9, 300.0, cost=8))
    assert controller.update(CareSettings(), 2) == (CareSettings(), [])
    with pytest.raises(ValueError, match="every"):
        RuleController(every=1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 5000), st.integers(0, 8), st.integers(0, 8),
                          st.integers(0, 8)), min_size=1, max_size=40),
       st.integers(2, 5), st.floats(0.0, 0.5), st.floats(0.0, 0.8))
def test_whatever_the_stats_every_setting_stays_in_bounds(seq, every, cw, pw):
    bounds = Bounds()
    controller = RuleController(bounds, every=every)
    s = CareSettings(cost_weight=cw, progress_weight=pw)
    for step, (rate, tokens, p, c, k) in enumerate(seq, 1):
        controller.observe(StepStats(step, rate, {"progress": p, "cost": c, "correctness": k}, tokens, 3.0))
        new, changes = controller.update(s, step)
        for change in changes:
            assert abs(change.new - change.old) <= bounds.of(change.key).step + 1e-9
        for key in KEYS:
            r = bounds.of(key)
            assert r.min <= getattr(new, key) <= r.max
        assert new.low <= new.high
        s = new


def test_bounds_refuse_what_care_would_refuse():
    with pytest.raises(ValueError, match="min <= max"):
        Range(0.5, 0.1, 0.05)
    with pytest.raises(ValueError, match="step"):
        Range(0.0, 0.5, 0.0)
    with pytest.raises(ValueError, match="default"):
        Bounds(cost_weight=Range(0.3, 0.5, 0.05))
    with pytest.raises(ValueError, match="refuses"):
        Bounds(progress_weight=Range(0.0, 1.0, 0.1))


@pytest.mark.parametrize("fields", [
    dict(success_rate=float("nan")), dict(success_rate=1.5), dict(output_tokens_per_episode=-1.0),
    dict(steps_per_episode=float("inf")), dict(regimes={"cost": -1}), dict(regimes={"cost": 0.5}),
])
def test_bad_step_stats_are_refused(fields):
    good = dict(step=1, success_rate=0.5, regimes={"cost": 1}, output_tokens_per_episode=9.0, steps_per_episode=3.0)
    with pytest.raises(ValueError, match="StepStats"):
        StepStats(**{**good, **fields})


def test_a_bad_endpoint_is_refused_at_construction():
    with pytest.raises(ValueError, match="http"):
        LlmController("127.0.0.1:8000", "tuner")


def test_step_stats_of_a_step_counts_groups_per_regime():
    win, lose = Outcome(True, 1.0, 4, 100), Outcome(False, 0.5, 8, 300)
    groups = [[win, win, win, win], [win, lose, lose, lose]]
    one = StepStats.of(7, groups, [score_group(g, Algo.care) for g in groups])
    assert one == StepStats(7, 5 / 8, {"cost": 1, "correctness": 1}, 175.0, 5.5)
    assert json.loads(json.dumps(one.to_json()))["regimes"] == {"cost": 1, "correctness": 1}


# The model-backed controller, against a real server on 127.0.0.1.

WINDOW = [stats(1, 0.5), stats(2, 0.5)]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI() as running:  # one for the module: each shutdown waits out a 0.5 s poll
        yield running


@pytest.fixture
def fake(server):
    server.replies, server.requests[:] = [], []
    return server


def llm(url: str, **kw) -> LlmController:
    return LlmController(url, "tuner", every=2, timeout=kw.pop("timeout", 2.0), **kw)


def test_a_valid_answer_is_applied_one_step_at_a_time(fake):
    answer = '```json\n{"cost_weight": 0.25, "progress_weight": 0.8, "reason": "tokens flat"}\n```'
    fake.replies = [text_reply(json.dumps("Here you go:\n" + answer))]
    new, changes = run(llm(fake.base_url.removesuffix("/v1")), WINDOW)
    assert (new.cost_weight, new.progress_weight) == (0.25, 0.6)  # 0.8 is in bounds, but one step is 0.1
    assert {c.key for c in changes} == {"cost_weight", "progress_weight"}
    assert all(c.reason == "tuner: tokens flat" for c in changes)
    request = json.loads(fake.requests[0])
    assert request["model"] == "tuner"
    state = json.loads(request["messages"][-1]["content"])
    assert state["settings"]["cost_weight"] == 0.2 and state["bounds"]["cost_weight"]["max"] == 0.5
    assert [s["step"] for s in state["steps"]] == [1, 2]


def test_a_value_out_of_bounds_is_rejected_and_the_others_applied(fake, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    answer = {"cost_weight": 0.9, "low": 0.3, "high": "0.8", "progress_weight": float("nan")}
    fake.replies = [text_reply(json.dumps(json.dumps(answer)))]
    new, changes = run(llm(fake.base_url), WINDOW)
    assert new == CareSettings(low=0.3) and [c.key for c in changes] == ["low"]
    assert "rejected cost_weight=0.9" in caplog.text and "[0.0, 0.5]" in caplog.text
    assert "rejected high='0.8'" in caplog.text and "rejected progress_weight=nan" in caplog.text


def test_thresholds_that_would_cross_are_dropped(fake):
    wide = Bounds(low=Range(0.1, 0.7, 0.5), high=Range(0.3, 0.9, 0.5))
    answer = json.dumps({"low": 0.7, "high": 0.3, "cost_weight": 0.15})
    fake.replies = [text_reply(json.dumps(answer))]
    new, changes = run(llm(fake.base_url, bounds=wide), WINDOW)
    assert new == CareSettings(cost_weight=0.15) and [c.key for c in changes] == ["cost_weight"]


@pytest.mark.parametrize("reply", [
    text_reply('"I would raise the cost weight a little."'),
    text_reply('"```json\\n{\\"cost_weight\\": \\n```"'),
    text_reply('"[0.3, 0.4]"'),
    raw_reply(b"not json at all"),
    raw_reply(b'{"choices": []}'),
    raw_reply(b"[" * 100_000),
    raw_reply(b'{"error": "overloaded"}', status=500),
], ids=["prose", "broken-json", "not-an-object", "body-not-json", "no-choices", "nested-too-deep", "status-500"])
def test_an_unusable_answer_is_skipped(fake, reply, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    fake.replies = [reply]
    assert run(llm(fake.base_url), WINDOW) == (CareSettings(), [])
    assert "settings kept" in caplog.text


def test_a_dead_endpoint_is_skipped(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    assert run(llm(closed_port_url()), WINDOW) == (CareSettings(), [])
    assert "ConnectError" in caplog.text


def test_a_silent_endpoint_times_out_and_is_skipped(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    with socket.socket() as silent:  # accepts connections into its backlog, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        assert run(llm(url, timeout=0.3), WINDOW) == (CareSettings(), [])
    assert "ReadTimeout" in caplog.text


def test_the_model_is_asked_only_every_n_steps(fake):
    reply = text_reply(json.dumps('{"cost_weight": 0.25}'))
    fake.replies = [reply, reply]
    controller = llm(fake.base_url)
    controller.observe(stats(1, 0.5))
    assert controller.update(CareSettings(), 1) == (CareSettings(), [])
    assert fake.requests == []
    controller.observe(stats(2, 0.5))
    new, _ = controller.update(CareSettings(), 2)
    assert new.cost_weight == 0.25 and len(fake.requests) == 1
