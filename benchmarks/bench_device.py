"""Device hot path, side by side on one virtual phone behind the real adb server.

Prints medians (ms) and ratios for:
  shell echo     — AdbDevice (lean host protocol) vs adbutils vs uiautomator2's d.shell
  observe + tap  — AdbDevice (kept-alive JSON-RPC + hierarchy parsing) vs stock uiautomator2
                   (d.dump_hierarchy() + d.click()) vs the raw protocol floor (same two RPCs on
                   one kept-alive stream, no parsing)

    python benchmarks/bench_device.py --iterations 50
"""

from __future__ import annotations

import argparse

import uiautomator2

from device_farm.adb.device import AdbDevice
from timing import median_ms
from device_farm.adb.server import AdbServer
from device_farm.virtual import VirtualPhone


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=50)
    n = ap.parse_args().iterations
    with VirtualPhone() as phone, AdbServer() as server:
        serial = server.connect_device(phone.address)
        ours = AdbDevice(serial, adb_port=server.port)
        ours.connect()
        stock = server.client.device(serial)
        u2 = uiautomator2.connect(stock)
        ours.shell(["monkey", "-p", "com.google.android.deskclock", "-c", "android.intent.category.LAUNCHER", "1"])
        x, y = 10, 10  # an inert spot: the screen stays the same across iterations

        rows = [
            ("shell echo: AdbDevice", median_ms(lambda: ours.shell("echo hi"), n)),
            ("shell echo: adbutils", median_ms(lambda: stock.shell("echo hi"), n)),
            ("shell echo: uiautomator2", median_ms(lambda: u2.shell("echo hi"), n)),
        ]

        def ours_round() -> None:
            ours.observe()
            ours.click(x, y)

        def stock_round() -> None:
            u2.dump_hierarchy()
            u2.click(x, y)

        def floor_round() -> None:
            ours.rpc.call("dumpWindowHierarchy", False, 50)
            ours.rpc.call("click", x, y)

        rows += [
            ("observe+tap: AdbDevice", median_ms(ours_round, n)),
            ("observe+tap: uiautomator2", median_ms(stock_round, max(5, n // 5))),
            ("observe+tap: protocol floor", median_ms(floor_round, n)),
        ]
        ours.close()
    width = max(len(name) for name, _ in rows)
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:8.2f} ms")
    d = dict(rows)
    print(f"\nshell: adbutils / AdbDevice = {d['shell echo: adbutils'] / d['shell echo: AdbDevice']:.1f}x")
    print(f"observe+tap: uiautomator2 / AdbDevice = {d['observe+tap: uiautomator2'] / d['observe+tap: AdbDevice']:.1f}x (target >= 10x)")
    print(f"observe+tap: AdbDevice / floor = {d['observe+tap: AdbDevice'] / d['observe+tap: protocol floor']:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
