"""Failure analysis on a real collection: each known failure lands in the clusters it should,
with its first step off the demo, rates per slice, infra episodes apart, and the same answer twice."""

from __future__ import annotations

import shutil

import pytest

from planner_runtime.coevolve import CoevolveError
from planner_runtime.coevolve.analysis import analyze, failure_gaps
from planner_runtime.contract import DeviceRef, Source, Trajectory, TrajectoryStatus, Usage
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.trajectories.store import TrajectoryStore


def _cluster(found, dimension, key):
    return next(s for s in found.clusters(dimension) if s.key == key)


def test_each_failure_is_clustered_by_its_first_error_demo_step_tool_and_app(failed_collection):
    path, collection, ids = failed_collection
    with TrajectoryStore(path, create=False) as store:
        found = analyze(store, collection)
    assert (found.attempts, found.failures, found.infra, found.unscored) == (4, 3, 0, 0)
    alarm, weather, texting = ids["clock.set_alarm"], ids["weather.now"], ids["messages.send_text"]
    bad_args = _cluster(found, "error", "invalid_arguments")
    assert (bad_args.failures, bad_args.attempts, bad_args.examples) == (1, 1, (alarm,))
    assert _cluster(found, "error", "repeated_action").examples == (texting,)
    no_error = _cluster(found, "error", "no_error")  # the wrong tool raised nothing; the success neither
    assert (no_error.failures, no_error.attempts, no_error.rate) == (1, 2, 0.5)
    assert {s.key: s.examples for s in found.clusters("demo_step")} == {
        "clock.set_alarm step 1: set_alarm with other hour": (alarm,),
        "weather.now step 1: called weather_forecast instead of weather_now": (weather,),
        "messages.send_text step 1: called read_screen instead of send_message": (texting,),
    }
    forecast = _cluster(found, "tool", "weather_forecast")  # the successful episode called it too
    assert (forecast.failures, forecast.attempts) == (1, 2)
    assert {s.key for s in found.clusters("app")} == {"Clock", "weather"}  # read_screen belongs to no app
    assert [(s.key, s.attempts - s.failures, s.attempts) for s in found.rates("domain")] == [
        ("clock", 0, 1), ("messages", 0, 1), ("weather", 1, 2)]
    assert [(s.key, s.success_rate) for s in found.rates("category")] == [("tool", 0.0), ("skills", 1.0)]
    failed = {a.task_id: a for a in found.failed}
    diff = failed["clock.set_alarm"].demo
    assert diff.arguments == ("hour",) and diff.actual.arguments["hour"] == 31 and diff.expected.arguments["hour"] == 7
    assert not failed["messages.send_text"].finished and failed["messages.send_text"].repeated
    assert found.clusters()[0].key == "tool" and found.clusters()[0].failures == 3  # the biggest first


def test_infra_episodes_are_left_out_and_counted_apart(failed_collection, tmp_path):
    path, collection, _ = failed_collection
    copy = tmp_path / "copy.sqlite"
    shutil.copy(path, copy)
    with TrajectoryStore(copy) as store:
        broken = Trajectory(task_id="clock.set_alarm", goal="g", source=Source.sandbox, device=DeviceRef(serial="x"),
                            planner="scripted", collection=collection)
        store.begin(broken)
        store.end(broken.id, TrajectoryStatus.infra_error, answer=None, usage=Usage())
        found = analyze(store, collection)
    assert (found.attempts, found.failures, found.infra) == (4, 3, 1)
    assert _cluster(found, "domain", "clock").attempts == 1


def test_the_same_store_gives_the_same_analysis_and_the_generate_view_agrees(failed_collection):
    path, collection, _ = failed_collection
    with TrajectoryStore(path, create=False) as store:
        first, second = analyze(store, collection), analyze(store, collection)
        gaps = failure_gaps(store, collection, builtin_suite())
        with pytest.raises(CoevolveError, match="no collection 'coll_nope'"):
            analyze(store, "coll_nope")
    assert first.to_json() == second.to_json()
    assert {g.name: (g.failures, g.episodes) for g in gaps.by_kind["domain"]} == {
        "clock": (1, 1), "messages": (1, 1), "weather": (1, 2)}
    assert [g.name for g in gaps.top("error")] == ["invalid_arguments", "repeated_action"]
