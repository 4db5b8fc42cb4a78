"""A trajectory records its data source (demo, teacher, self) and training selects by it; fresh
seeds (``--first-seed``) make instances of a template no collection from seed 0 ever ran."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from planner_runtime.contract import DataSource
from planner_runtime.trajectories.query import Filter
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training import TrainingError, data

TEMPLATE = "keep.create_list"  # a template with a random title


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=240)


@pytest.fixture
def demo_store(tmp_path):
    store = tmp_path / "t.sqlite"
    where = ["--store", str(store), "--state-dir", str(tmp_path / "pool"), "-n", "2"]
    res = cli("collect", "--planner", "demo", "--task", TEMPLATE, "-k", "3", "--first-seed", "40", *where, "--json")
    assert res.returncode == 0, res.stderr
    return store, json.loads(res.stdout)["collection"], where


def test_demo_episodes_record_their_source_and_run_the_seeds_asked_for(demo_store):
    store, coll, where = demo_store
    with TrajectoryStore(store, create=False) as db:
        trajs = [db.get(i) for i in db.ids(collection=coll)]
        assert sorted(t.task_id for t in trajs) == [f"{TEMPLATE}@{s}" for s in (40, 41, 42)]
        assert {t.data_source for t in trajs} == {DataSource.demo} and all(t.verdict.success for t in trajs)
        assert len({t.goal for t in trajs}) > 1  # other seeds, other titles
        assert len(data.select(db, data.Selection(data_source="demo", split="all"))) == 3
        assert data.select(db, data.Selection(data_source="teacher", split="all")) == []
    # a resume runs what the collection was started with: another first seed is refused, nothing run
    again = cli("collect", "--resume", coll, "--first-seed", "0", *where)
    assert again.returncode == 2 and "--first-seed 0 differs" in " ".join(again.stderr.split())
    with TrajectoryStore(store, create=False) as db:
        assert len(list(db.ids(collection=coll))) == 3


def test_rows_from_before_the_column_are_selected_by_their_planner(demo_store):
    store, coll, _ = demo_store
    with sqlite3.connect(store) as db:  # as a store of the previous schema holds them
        db.execute("UPDATE trajectories SET data_source = NULL")
    with TrajectoryStore(store, create=False) as db:
        assert len(db.query(Filter(data_source="demo"))) == 3
        assert db.query(Filter(data_source="self")) == []


def test_an_unknown_data_source_is_a_clear_error_and_trains_nothing(demo_store, tmp_path):
    store, _, _ = demo_store
    with pytest.raises(TrainingError, match="data source 'human': choose demo, teacher, self"):
        data.Selection(data_source="human")
    res = cli("train", "sft", "--store", str(store), "--data-source", "teacher", "--split", "all", "--out", "x")
    assert res.returncode == 2 and "Traceback" not in res.stderr and "no training data" in res.stderr
