"""A real collection with known failures, made once per session with the harness: a scripted
planner that calls set_alarm with hour 31 (invalid_arguments), weather_forecast where weather_now
is the demo's call (a wrong tool, no error), read_screen over and over without finishing
(repeated_action, truncated), and one task done exactly as its demo (a success)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = {
    "clock.set_alarm": [{"name": "set_alarm", "arguments": {"hour": 31, "minutes": 30}},
                        {"name": "finish", "arguments": {"answer": "done"}}],
    "weather.now": [{"name": "weather_forecast", "arguments": {"city": "Paris"}},
                    {"name": "finish", "arguments": {"answer": "I do not know"}}],
    "messages.send_text": [{"name": "read_screen", "arguments": {}}] * 5,
    "weather.umbrella_tomorrow": [{"name": "weather_forecast", "arguments": {"city": "London", "day": "tomorrow"}},
                                  {"name": "finish", "arguments": {"answer": "Yes"}}],
}


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.fixture(scope="session")
def failed_collection(tmp_path_factory) -> tuple[Path, str, dict[str, str]]:
    """(store, collection id, task id → trajectory id)."""
    root = tmp_path_factory.mktemp("coevolve")
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = ["collect", "--planner", "scripted", "--script", str(script), "--store", str(root / "t.sqlite"), "-n", "2",
            "--state-dir", str(root / "pool")]
    for task in SCRIPT:
        args += ["--task", task]
    proc = cli(*args)
    assert proc.returncode == 0 and "1 succeeded, 3 failed" in proc.stdout, proc.stdout + proc.stderr
    listed = json.loads(cli("trajectories", "list", "--store", str(root / "t.sqlite"), "--json").stdout)
    return root / "t.sqlite", listed[0]["collection"], {row["task_id"]: row["id"] for row in listed}
