"""Ctrl-C while planner turns run native (torch) code on the workers: the collection exits through
the normal path, with no C++ abort ("terminate called without an active exception", status 134)
from threads still computing as the interpreter shuts down."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

# A collection whose planner computes with torch for a while each turn, as a local model does.
SCRIPT = """
import sys, time
from pathlib import Path
import torch
from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.trajectories.store import TrajectoryStore

torch.set_num_threads(2)


class Computes(ScriptedPlanner):
    def plan(self, messages, tools, *, sampling=None):
        a, started = torch.randn(400, 400), time.monotonic()
        while time.monotonic() - started < 2:
            a = torch.tanh(a @ a)
        return super().plan(messages, tools, sampling=sampling)


where = Path(sys.argv[1])
tasks = [t for t in builtin_suite().tasks if t.id == "clock.set_alarm"]
with TrajectoryStore(where / "t.sqlite") as store, DevicePool([VirtualSource(2)], state_dir=where / "pool") as pool:
    try:
        collect(tasks, pool=pool, store=store, workers=2, repeat=4, max_steps=10,
                planner_for=lambda t: Computes([{"name": "wait", "arguments": {"seconds": 0.1}}] * 8))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
"""


def _running(path) -> int:
    try:
        with sqlite3.connect(path) as db:
            return db.execute("SELECT count(*) FROM trajectories WHERE status = 'running'").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no tables yet
        return 0


def test_ctrl_c_during_native_planner_work_exits_without_a_native_abort(tmp_path):
    script = tmp_path / "collect_torch.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _running(tmp_path / "t.sqlite") < 2:
            time.sleep(0.1)
        assert _running(tmp_path / "t.sqlite") == 2
        time.sleep(0.5)  # both workers are inside a planner turn now
        proc.send_signal(signal.SIGINT)
        _, errors = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "terminate called" not in errors, errors
    assert proc.returncode == 130 and "interrupted" in errors, errors
    assert _running(tmp_path / "t.sqlite") == 0
