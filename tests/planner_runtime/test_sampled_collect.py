"""Rejection sampling over a teacher: ``collect --temperature T -k K`` against an OpenAI-compatible
endpoint (our own server over a real socket, in front of a stand-in teacher model) asks every
turn at T with seeds no other episode used, a resumed collection included, and only the samples
the task's verifier passes become SFT data."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import threading

from planner_runtime.contract import ToolCall
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.toolcalls import format_tool_call, parse_tool_calls
from planner_runtime.serving.server import PlannerServer


class Teacher:
    """A stand-in for a remote teacher model: right or wrong at random, decided by the request's
    seed (so different seeds give different episodes, the same seed the same one)."""

    name, release = "teacher", "teacher-1"

    def __init__(self) -> None:
        self.asked: list[Sampling] = []
        self._lock = threading.Lock()

    def plan(self, messages, tools, *, sampling=None) -> PlannerOutput:  # noqa: ANN001
        with self._lock:
            self.asked.append(sampling)
        if messages[-1].role.value == "tool":  # the alarm was set: done
            call = ToolCall(name="finish", arguments={"answer": "Alarm set"})
        else:
            hour = random.Random(sampling.seed).choice([7, 8])
            call = ToolCall(name="set_alarm", arguments={"hour": hour, "minutes": 30})
        text = format_tool_call(call)
        return PlannerOutput(text=text, tool_calls=tuple(parse_tool_calls(text)[0]))


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=timeout)


def test_samples_at_a_temperature_with_their_own_seeds_and_only_verified_ones_are_training_data(tmp_path):
    teacher = Teacher()
    store = tmp_path / "t.sqlite"
    with PlannerServer(teacher, model_name="teacher") as server:
        url = f"openai://127.0.0.1:{server.port}/teacher"
        where = ["--store", str(store), "--state-dir", str(tmp_path / "pool"), "-n", "2"]
        first = cli("collect", "--planner", url, "--task", "clock.set_alarm", "--temperature", "0.8", "-k", "4", *where, "--json")
        assert first.returncode == 0, first.stderr
        coll = json.loads(first.stdout)["collection"]
        more = cli("collect", "--resume", coll, "-k", "6", *where, "--json")  # two more samples
        assert more.returncode == 0, more.stderr
    assert {s.temperature for s in teacher.asked} == {0.8}
    first_turns = [s.seed for s in teacher.asked if s.seed % 1000 == 0]
    assert len(first_turns) == 6 and len(set(first_turns)) == 6  # six episodes, none sampled like another

    with sqlite3.connect(store) as db:
        outcomes = dict(db.execute("SELECT id, success FROM trajectories WHERE collection = ? AND parent IS NULL", (coll,)).fetchall())
    assert len(outcomes) == 6 and 0 < sum(outcomes.values()) < 6  # some samples set 8:30, and failed
    with sqlite3.connect(store) as db:  # a teacher's episodes say so, whatever their verdict
        assert db.execute("SELECT DISTINCT data_source FROM trajectories WHERE collection = ?", (coll,)).fetchall() == [("teacher",)]
    out = tmp_path / "sft.jsonl"
    exported = cli("export", "sft", "--out", str(out), "--store", str(store))
    assert exported.returncode == 0, exported.stderr
    exported_ids = {json.loads(row)["trajectory_id"] for row in out.read_text().splitlines()}
    assert exported_ids == {i for i, ok in outcomes.items() if ok}  # the wrong samples are no training data


def test_a_temperature_with_fixed_calls_is_a_usage_error(tmp_path):
    res = cli("collect", "--planner", "demo", "--task", "clock.set_alarm", "--temperature", "0.8",
              "--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "1")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--temperature samples a model; --planner demo plays fixed calls" in " ".join(res.stderr.split())
    assert not (tmp_path / "t.sqlite").exists()
