"""The local model's thread count: the cores the process is given, or PLANNER_AGENT_THREADS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from planner_runtime.errors import ConfigError
from planner_runtime.planners.local.threads import ENV_THREADS, available_cores, intra_op_threads, use_threads

CHILD = (
    "import os, torch\n"
    "from planner_runtime.planners.local.threads import intra_op_threads, use_threads\n"
    "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
    "print(intra_op_threads(), use_threads(torch, intra_op_threads()), torch.get_num_threads())\n"
)


def test_the_count_follows_the_cores_the_process_is_given():
    assert intra_op_threads({}) == available_cores() == len(os.sched_getaffinity(0))
    # a process pinned to one core computes with one thread, however many the machine has
    env = {k: v for k, v in os.environ.items() if k != ENV_THREADS}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["1", "1", "1"]


def test_the_setting_overrides_the_cores():
    assert intra_op_threads({ENV_THREADS: "3"}) == 3
    assert intra_op_threads({ENV_THREADS: " "}) == available_cores()
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        assert use_threads(torch, 2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_setting_is_a_clear_config_error(value):
    with pytest.raises(ConfigError, match=f"{ENV_THREADS}=.*positive whole number"):
        intra_op_threads({ENV_THREADS: value})
