"""benchmarks/bench_care_vs_grpo.py picks up the bench a stopped run left, and only that one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from planner_runtime.trajectories.store import TrajectoryStore

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_care_vs_grpo.py"


def _script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_care_vs_grpo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _spec(model: str, per_template: int | None = 1, split: str = "test") -> dict:
    return {"split": split, "per_template": per_template, "planner": "local", "model": model, "max_steps": 6}


def test_a_stopped_bench_of_the_same_planners_and_held_out_set_is_resumed(tmp_path):
    stopped_bench = _script()._stopped_bench
    store = tmp_path / "eval.sqlite"
    models = ["release:sft", "release:sft-care", "release:sft-grpo"]
    assert stopped_bench(store, models, 1, 6) is None  # no store yet: a new bench
    with TrajectoryStore(store, create=True) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_a.{i}", _spec(model))
        for i, model in enumerate(models):  # the same planners over every test task
            db.record_collection(f"bench_b.{i}", _spec(model, per_template=None))
        for i, model in enumerate(models[:2]):  # two of the three planners
            db.record_collection(f"bench_c.{i}", _spec(model))
        for i, model in enumerate([*models, "release:other"]):  # one planner more
            db.record_collection(f"bench_d.{i}", _spec(model))
    assert stopped_bench(store, models, 1, 6) == "bench_a"
    assert stopped_bench(store, models, None, 6) == "bench_b"
    assert stopped_bench(store, models, 1, 8) is None  # another step limit: a new bench
    assert stopped_bench(store, list(reversed(models)), 1, 6) is None  # the order is the report's order
    with TrajectoryStore(store, create=False) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_e.{i}", _spec(model))
    assert stopped_bench(store, models, 1, 6) == "bench_e"  # the latest
