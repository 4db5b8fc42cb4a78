"""`data build` and `data explain` on a real store: demo episodes of ten tasks over every category
(two of each, identical call sequences) and two verified failures, collected on the virtual
phone. The draw is deterministic, follows the weights, caps and dedup, honours the review queue,
and training takes a built dataset (and refuses one of another store)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from planner_runtime.contract import utcnow
from planner_runtime.data.build import build, explain
from planner_runtime.data.dataset import DatasetError
from planner_runtime.data.recipe import load_recipe
from planner_runtime.trajectories.schema import review_items
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training import TrainingError, data

TASKS = ["clock.set_alarm", "messages.send_text", "shopping.cheapest_price", "banking.pay_rent_remembered",
         "memory.text_partner_late", "food.best_rated_mexican", "calendar.day_agenda", "subagent.banking_balance_text",
         "subagent.translation_text", "transit.quickest_route"]
FAILED = ["clock.set_alarm", "messages.send_text"]


def cli(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PLANNER_AGENT_HOME": str(home)} if home else {})}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recipe")
    store, where = root / "t.sqlite", ["--state-dir", str(root / "pool"), "-n", "2"]
    demo = cli("collect", "--planner", "demo", *[a for t in TASKS for a in ("--task", t)], "-k", "2", "--store", str(store), *where)
    assert demo.returncode == 0 and "20 succeeded" in demo.stdout, demo.stdout + demo.stderr
    script = root / "noop.json"
    script.write_text(json.dumps({t: [{"name": "finish", "arguments": {"answer": "I do not know"}}] for t in FAILED}))
    bad = cli("collect", "--planner", "scripted", "--script", str(script), *[a for t in FAILED for a in ("--task", t)],
              "--store", str(store), *where)
    assert bad.returncode == 0 and "0 succeeded, 2 failed" in bad.stdout, bad.stdout + bad.stderr
    return store


@pytest.fixture
def store_file(collected, tmp_path) -> Path:
    """A copy of the collected store this test may change."""
    copy = tmp_path / "store" / "t.sqlite"
    copy.parent.mkdir()
    shutil.copy(collected, copy)
    return copy


def recipe(tmp_path: Path, body: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"name: test\n{body}", encoding="utf-8")
    return path


def draw(store_file: Path, path: Path):  # noqa: ANN201 - a Draw
    with TrajectoryStore(store_file, create=False) as db:
        return explain(load_recipe(path), db)


def category(row) -> str:  # noqa: ANN001
    return dict(row.buckets)["category"]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_builds_are_byte_identical_and_another_seed_differs(store_file, tmp_path):
    r0, r1 = recipe(tmp_path, "size: 5\nseed: 0\n"), recipe(tmp_path, "size: 5\nseed: 1\n", "r1.yaml")
    moved = tmp_path / "elsewhere.sqlite"
    shutil.copy(store_file, moved)
    outs = []
    for where, path, out in ((store_file, r0, "a"), (moved, r0, "b"), (store_file, r1, "c")):
        with TrajectoryStore(where, create=False) as db:
            outs.append(build(load_recipe(path), db, tmp_path / out))
    a, b, c = (files(tmp_path / o) for o in "abc")
    assert a == b and set(a) == {"dataset.jsonl", "manifest.json"}  # same recipe, same content: the same bytes
    assert a["dataset.jsonl"] != c["dataset.jsonl"]
    manifest = json.loads(a["manifest.json"])
    assert manifest["dataset_sha256"] == hashlib.sha256(a["dataset.jsonl"]).hexdigest() == outs[0].dataset_sha256
    assert manifest["recipe"]["sha256"] == hashlib.sha256(r0.read_bytes()).hexdigest() and manifest["recipe"]["text"] == r0.read_text()
    assert manifest["counts"]["drawn"] == 5 and len(a["dataset.jsonl"].splitlines()) == 5
    with TrajectoryStore(store_file, create=False) as db:
        assert build(load_recipe(r0), db, tmp_path / "a").unchanged  # the same dataset again: left as it is
        with pytest.raises(DatasetError, match="already holds another dataset"):
            build(load_recipe(r1), db, tmp_path / "a")
    assert files(tmp_path / "a") == a


def test_a_zero_weight_drops_a_category_and_a_heavy_one_dominates(store_file, tmp_path):
    dropped = draw(store_file, recipe(tmp_path, "size: 100\nweights:\n  category: {subagent: 0}\n  domain: {banking: 0}\n"))
    assert dropped.rows and not any(category(r) == "subagent" or dict(r.buckets)["domain"] == "banking" for r in dropped.rows)
    counts = dropped.counts()
    assert counts["buckets"]["category"]["subagent"] == {"candidates": 4, "drawn": 0}
    assert counts["excluded"]["weight_zero"] == 6  # 4 sub-agent episodes and 2 more of banking
    for seed in range(3):
        heavy = draw(store_file, recipe(tmp_path, f"size: 2\nseed: {seed}\nweights:\n  category: {{memory: 1000000}}\n"))
        assert [category(r) for r in heavy.rows] == ["memory", "memory"]
        assert {r.weight for r in heavy.rows} == {1e6}


def _calls(store_file: Path) -> dict[str, int]:
    """The tool calls each stored episode made besides finish, read from its steps."""
    with TrajectoryStore(store_file, create=False) as db:
        return {tid: sum(1 for s in db.get(tid).steps if s.tool_call is not None and s.tool_call.name != "finish")
                for tid in db.ids()}


def test_calls_weights_pick_episodes_by_how_many_tool_calls_they_made(store_file, tmp_path):
    made = _calls(store_file)
    everything = draw(store_file, recipe(tmp_path, "size: 100\n"))
    for row in everything.rows:  # each row's bucket is the count of its stored calls
        n = made[row.trajectory_id]
        assert dict(row.buckets)["calls"] == {0: "zero", 1: "one", 2: "two"}.get(n, "three_plus")
    drawn = [made[r.trajectory_id] for r in everything.rows]
    single = drawn.count(1)
    assert 0 < single < len(drawn), drawn  # the ten demos hold both kinds
    multi = draw(store_file, recipe(tmp_path, "size: 100\nweights:\n  calls: {zero: 0, one: 0}\n"))
    assert multi.rows and all(made[r.trajectory_id] >= 2 for r in multi.rows)
    assert len(multi.rows) == len(drawn) - single and multi.counts()["buckets"]["calls"]["one"] == {"candidates": 2 * single, "drawn": 0}
    for seed in range(3):
        heavy = draw(store_file, recipe(tmp_path, f"size: 2\nseed: {seed}\nweights:\n  calls: {{one: 1000000}}\n"))
        assert [made[r.trajectory_id] for r in heavy.rows] == [1, 1]


def test_dedup_keeps_one_of_identical_call_sequences_and_caps_bound_a_template(store_file, tmp_path):
    deduped = draw(store_file, recipe(tmp_path, "size: 100\n"))
    assert len(deduped.rows) == 10 and deduped.counts()["excluded"]["dedup"] == 10 and deduped.candidates == 20
    assert len({r.task_id for r in deduped.rows}) == 10
    everything = draw(store_file, recipe(tmp_path, "size: 100\ndedup: false\n"))
    assert len(everything.rows) == 20
    capped = draw(store_file, recipe(tmp_path, "size: 100\ndedup: false\ncaps: {per_task: 1}\n"))
    assert len(capped.rows) == 10 and len({r.task_id for r in capped.rows}) == 10 and capped.counts()["excluded"]["cap"] == 10
    repeats = draw(store_file, recipe(tmp_path, "size: 50\nallow_repeats: true\ncaps: {per_task: 3}\n"))
    per_task = {t: sum(r.task_id == t for r in repeats.rows) for t in TASKS}
    assert len(repeats.rows) == 30 and set(per_task.values()) == {3}  # with replacement, still 3 of a template at most
    assert repeats.counts()["distinct"] == 10
    failures = draw(store_file, recipe(tmp_path, "size: 100\nselect: {success: false}\n"))
    assert sorted(r.task_id for r in failures.rows) == sorted(FAILED)


def _review(store_file: Path, tid: str, status: str, resolution: str | None = None, label: bool | None = None) -> None:
    with TrajectoryStore(store_file, create=False) as db, db.engine.begin() as conn:
        now = utcnow()
        conn.execute(insert(review_items).values(
            id=f"item-{tid}", trajectory_id=tid, reason="manual", detail="", priority=0, status=status, required_reviews=1,
            resolution=resolution, label_success=label, created_at=now, resolved_at=now + timedelta(seconds=1) if resolution else None))


def test_review_rejects_stay_out_relabels_count_with_the_reviewers_success_and_pending_is_counted(store_file, tmp_path):
    with TrajectoryStore(store_file, create=False) as db:
        top = [db.get(i) for i in db.ids(infra=False) if db.get(i).parent is None]
    ok = [t.id for t in top if t.verdict.success]
    (failed, _) = [t.id for t in top if not t.verdict.success]
    rejected, relabelled_out, waiting = ok[:3]
    _review(store_file, rejected, "resolved", "reject")
    _review(store_file, relabelled_out, "resolved", "relabel", False)
    _review(store_file, failed, "resolved", "relabel", True)  # an approved fix of a verified failure
    _review(store_file, waiting, "open")
    result = draw(store_file, recipe(tmp_path, "size: 100\ndedup: false\n"))
    drawn = {r.trajectory_id: r for r in result.rows}
    assert rejected not in drawn and relabelled_out not in drawn
    assert failed in drawn and drawn[waiting].pending_review and not drawn[failed].pending_review
    counts = result.counts()
    assert counts["excluded"]["review_rejected"] == 1 and counts["excluded"]["review_relabelled_out"] == 1
    assert counts["relabelled_in"] == 1 and counts["pending_review"] == {"candidates": 1, "drawn": 1}
    assert len(drawn) == 19  # 20 successes, 2 left by review, 1 failure relabelled in
    # training's own selection honours the same labels
    with TrajectoryStore(store_file, create=False) as db:
        trained = {t.id for t in data.select(db, data.Selection())}
        failures = {t.id for t in data.select(db, data.Selection(success=False))}
    assert trained == set(drawn)
    assert relabelled_out in failures and failed not in failures and rejected not in failures | trained


def test_the_cli_refuses_a_bad_recipe_in_one_line_and_writes_nothing(store_file, tmp_path):
    bad = recipe(tmp_path, "size: 3\nweights:\n  category: {tool: 0, memory: 0, skills: 0, subagent: 0}\n")
    out = tmp_path / "out"
    res = cli("data", "build", "--recipe", str(bad), "--store", str(store_file), "--out", str(out))
    assert res.returncode == 2 and res.stderr.strip() == f"error: {bad}:4: weights.category: every category bucket weighs 0, " \
        "so nothing could be drawn (a bucket not listed weighs 1.0; give one a weight above 0)".replace("\n", "")
    assert not out.exists() and res.stdout == ""
    unknown = recipe(tmp_path, "size: 3\nweights:\n  category: {gui: 1}\n", "u.yaml")
    res = cli("data", "explain", "--recipe", str(unknown), "--store", str(store_file))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "u.yaml:4: weights.category.gui" in res.stderr
    res = cli("data", "explain", "--recipe", str(bad), "--store", str(tmp_path / "typo.sqlite"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_the_cli_explains_builds_and_never_overwrites(store_file, tmp_path):
    good = recipe(tmp_path, "size: 4\nweights:\n  category: {memory: 2}\n")
    res = cli("data", "explain", "--recipe", str(good), "--store", str(store_file))
    assert res.returncode == 0, res.stderr
    assert "memory" in res.stdout and "candidates" in res.stdout and "10 dedup" in res.stdout
    explained = json.loads(cli("data", "explain", "--recipe", str(good), "--store", str(store_file), "--json").stdout)
    out = tmp_path / "out"
    res = cli("data", "build", "--recipe", str(good), "--store", str(store_file), "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    manifest = json.loads(res.stdout)
    assert manifest["counts"] == explained["counts"] and manifest == json.loads((out / "manifest.json").read_text())
    written = files(out)
    other = recipe(tmp_path, "size: 4\nseed: 9\n", "other.yaml")
    res = cli("data", "build", "--recipe", str(other), "--store", str(store_file), "--out", str(out))
    assert res.returncode == 2 and "already holds another dataset" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert files(out) == written


def test_sft_trains_on_a_built_dataset_and_refuses_one_of_another_store(store_file, tmp_path):
    from planner_runtime.training import sft

    path = recipe(tmp_path, "size: 2\nweights:\n  category: {tool: 1000000}\n")
    with TrajectoryStore(store_file, create=False) as db:
        built = build(load_recipe(path), db, tmp_path / "ds")
        options = sft.SftOptions(max_steps=1, lora_rank=2, lora_alpha=4, max_length=64, lr=5e-3, save_steps=1, threads=1)
        result = sft.train_sft(db, data.Selection(), options, "from-recipe", home=tmp_path / "home", progress=False,
                               dataset=tmp_path / "ds")
    recorded = result.manifest.data
    assert recorded["recipe"] == {"name": "test", "sha256": load_recipe(path).sha256, "dataset_sha256": built.dataset_sha256, "rows": 2}
    assert recorded["trajectories"] == 2 and recorded["selection"] is None
    with TrajectoryStore(tmp_path / "other.sqlite") as other, pytest.raises(TrainingError, match="built from another store"):
        data.from_dataset(other, tmp_path / "ds")
    lines = (tmp_path / "ds" / "dataset.jsonl").read_text().splitlines()
    (tmp_path / "ds" / "dataset.jsonl").write_text(lines[0] + "\n")
    with TrajectoryStore(store_file, create=False) as db, pytest.raises(TrainingError, match="changed after it was built"):
        data.from_dataset(db, tmp_path / "ds")
    res = cli("train", "sft", "--store", str(store_file), "--dataset", str(tmp_path / "ds"), "--source", "real", home=tmp_path / "home")
    assert res.returncode == 2 and "drop --source" in res.stderr
