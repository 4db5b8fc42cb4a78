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


def _spec(model: str, per_template: int | None = 1, split: str | None = "test", tasks: list[str] | None = None,
          first_seed: int = 0) -> dict:
    return {"split": split, "per_template": per_template, "planner": "local", "model": model, "max_steps": 6,
            "tasks": tasks or [], "first_seed": first_seed}


def _held_out(per_template: int | None = 1, max_steps: int = 6) -> dict:
    return {"split": "test", "per_template": per_template, "max_steps": max_steps}


def test_a_stopped_bench_of_the_same_planners_and_held_out_set_is_resumed(tmp_path):
    stopped_bench = _script()._stopped_bench
    store = tmp_path / "eval.sqlite"
    models = ["release:sft", "release:sft-care", "release:sft-grpo"]
    assert stopped_bench(store, models, _held_out()) is None  # no store yet: a new bench
    with TrajectoryStore(store, create=True) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_a.{i}", _spec(model))
        for i, model in enumerate(models):  # the same planners over every test task
            db.record_collection(f"bench_b.{i}", _spec(model, per_template=None))
        for i, model in enumerate(models[:2]):  # two of the three planners
            db.record_collection(f"bench_c.{i}", _spec(model))
        for i, model in enumerate([*models, "release:other"]):  # one planner more
            db.record_collection(f"bench_d.{i}", _spec(model))
    assert stopped_bench(store, models, _held_out()) == "bench_a"
    assert stopped_bench(store, models, _held_out(None)) == "bench_b"
    assert stopped_bench(store, models, _held_out(1, 8)) is None  # another step limit: a new bench
    assert stopped_bench(store, list(reversed(models)), _held_out()) is None  # the order is the report's order
    with TrajectoryStore(store, create=False) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_e.{i}", _spec(model))
    assert stopped_bench(store, models, _held_out()) == "bench_e"  # the latest


def test_the_fresh_seed_bench_is_told_apart_from_the_held_out_one_and_from_other_seeds_or_tasks(tmp_path):
    stopped_bench = _script()._stopped_bench
    store = tmp_path / "eval.sqlite"
    models = ["release:sft", "release:sft-care", "release:sft-grpo"]
    trained = ["food.order_dish", "payments.balance"]
    fresh = {"tasks": trained, "first_seed": 1000, "split": None, "max_steps": 6}
    with TrajectoryStore(store, create=True) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_held.{i}", _spec(model))
        for i, model in enumerate(models):  # the same templates at another seed
            db.record_collection(f"bench_seed0.{i}", _spec(model, None, None, trained))
        for i, model in enumerate(models):  # one template fewer
            db.record_collection(f"bench_one.{i}", _spec(model, None, None, trained[:1], 1000))
    assert stopped_bench(store, models, fresh) is None
    assert stopped_bench(store, models, _held_out()) == "bench_held"
    with TrajectoryStore(store, create=False) as db:
        for i, model in enumerate(models):
            db.record_collection(f"bench_fresh.{i}", _spec(model, None, None, trained, 1000))
    assert stopped_bench(store, models, fresh) == "bench_fresh"
    assert stopped_bench(store, models, _held_out()) == "bench_held"  # a later bench of other tasks is not the held-out one


def test_only_trained_templates_with_random_parameters_get_a_fresh_seed():
    from planner_runtime.tasks.spec import builtin_suite

    tasks = builtin_suite().tasks
    fixed = next(t.id for t in tasks if not t.random and t.split_name == "train" and "@" not in t.id)
    chosen = ["food.order_dish", fixed, "payments.balance"]
    assert _script()._random_templates(chosen) == ["food.order_dish", "payments.balance"]
    everything = _script()._random_templates(None)
    assert "food.order_dish" in everything and fixed not in everything
    assert all(t.random and t.split_name == "train" for t in tasks if t.id in everything)
