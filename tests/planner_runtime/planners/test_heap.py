"""Freed large blocks leave the process once the planner has fixed glibc's mmap threshold."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

_PROBE = textwrap.dedent(
    """
    import sys
    from planner_runtime.planners.local.heap import return_large_blocks

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    if sys.argv[1] == "fixed":
        assert return_large_blocks()
    freed = bytearray(8 << 20)
    del freed  # glibc's default now serves blocks up to 8 MiB from the heap
    before = rss_mb()
    blocks, kept = [], []
    for _ in range(150):  # 2 MiB blocks (an activation) between small ones that stay (a cache)
        block = bytearray(2 << 20)
        block[::4096] = b"x" * len(block[::4096])
        blocks.append(block)
        kept.append(bytearray(100_000))
    del blocks
    print(round(rss_mb() - before))
    """
)


def _kept_mb(mode: str) -> int:
    # glibc's own defaults: no tuning from the environment
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and not k.startswith("GLIBC_TUNABLES") and k != "LD_PRELOAD"}
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=60, check=True, env=env)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_freed_large_blocks_return_to_the_system_with_the_threshold_fixed():
    fixed, default = _kept_mb("fixed"), _kept_mb("default")
    assert fixed < 40  # the 15 MB of small blocks still held, the 300 MB of freed large ones gone
    assert default > 200  # the behaviour being fixed: freed blocks stay between the small ones
