"""What a pool lease costs, side by side on virtual phones behind the real adb server.

Prints medians (ms) and ratios for:
  bare connect   — AdbDevice connect + one shell + close, no pool (the floor)
  lease          — pool.lease() + one shell + release, without the health probe
  lease + probe  — the same with the default health probe (boot, battery, df, uiautomator /ping)
and leases per second with 8 threads on 8 phones.

    python benchmarks/bench_pool.py --iterations 100
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from device_farm.adb.device import AdbDevice
from timing import median_ms
from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    source = VirtualSource(8)
    with tempfile.TemporaryDirectory() as tmp, DevicePool([source], state_dir=Path(tmp) / "a") as probing:
        bare_pool = DevicePool([source], state_dir=Path(tmp) / "b", probe_on_lease=False)
        serial = source.phones[0].address

        def bare() -> None:
            with AdbDevice(serial, adb_port=source.port) as d:
                d.shell("echo hi")

        def leased(pool: DevicePool) -> None:
            with pool.lease(timeout=5) as d:
                d.shell("echo hi")

        floor = median_ms(bare, args.iterations)
        plain = median_ms(lambda: leased(bare_pool), args.iterations)
        probed = median_ms(lambda: leased(probing), args.iterations)
        print(f"bare connect+shell   {floor:7.2f} ms  1.00x")
        print(f"lease+shell          {plain:7.2f} ms  {plain / floor:.2f}x")
        print(f"lease+probe+shell    {probed:7.2f} ms  {probed / floor:.2f}x")

        count = [0]
        guard = threading.Lock()
        stop = time.monotonic() + args.seconds

        def worker() -> None:
            while time.monotonic() < stop:
                leased(probing)
                with guard:
                    count[0] += 1

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"8 threads, 8 phones: {count[0] / args.seconds:.0f} leases/s with probe")


if __name__ == "__main__":
    main()
