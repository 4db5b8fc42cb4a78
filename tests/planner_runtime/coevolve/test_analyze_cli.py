"""`planner-agent analyze`: the table of clusters and rates, proposal files written once and
never over, the same JSON twice, and every user mistake one line on stderr with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

from planner_runtime.coevolve.proposals import load_proposal


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=300)


def test_analyze_prints_clusters_writes_proposals_once_and_is_deterministic(failed_collection, tmp_path):
    store, collection, ids = failed_collection
    out = tmp_path / "out"
    proc = cli("analyze", collection, "--store", str(store), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "invalid_arguments" in proc.stdout and "success by domain: clock 0/1, messages 0/1, weather 1/2" in proc.stdout
    written = sorted(p.name for p in out.iterdir())
    assert "analysis.json" in written and len(written) == 7  # the analysis and six proposals
    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["clusters"]["error"][0] == {"dimension": "error", "key": "invalid_arguments", "count": 1, "attempts": 1,
                                                "rate": 1.0, "examples": [ids["clock.set_alarm"]]}
    for name in written:
        if name != "analysis.json":
            assert load_proposal(out / name).motivation.count >= 1
    again = cli("analyze", collection, "--store", str(store), "--out", str(out))
    assert again.returncode == 2 and "exists" in again.stderr and sorted(p.name for p in out.iterdir()) == written
    one, two = (cli("analyze", collection, "--store", str(store), "--json") for _ in range(2))
    assert one.returncode == 0 and json.loads(one.stdout) == json.loads(two.stdout)
    assert json.loads(one.stdout)["analysis"] == analysis


def test_analyze_mistakes_are_one_line_and_exit_2(failed_collection, tmp_path):
    store, collection, _ = failed_collection
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    for args, words in (
        (("coll_nope", "--store", str(store)), "no collection 'coll_nope'"),
        ((collection, "--store", str(tmp_path / "none.sqlite")), "no trajectory store"),
        ((collection, "--store", str(garbage)), "cannot open trajectory store"),
        ((collection, "--store", str(store), "--recipe", str(tmp_path / "none.yaml")), "no such file"),
    ):
        proc = cli("analyze", *args, "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    assert garbage.read_text() == "not a database"
