"""Latency of the virtual phone through the real adb server.

Prints medians of (1) `shell:echo hi` through adbutils as shipped, and (2) a
`dumpWindowHierarchy` JSON-RPC over one kept-alive `tcp:9008` stream, next to the same call
made the stock uiautomator2 way (a new stream per request), as a ratio; (3) screen
rendering (paint, PNG encode, cached repeat) and screenshots through adbutils and
uiautomator2; (4) whole-phone snapshot save and restore on a phone holding some state.

    python benchmarks/bench_virtual_phone.py --iterations 200
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import statistics
import time
from typing import Callable

import uiautomator2 as u2

from device_farm.adbserver import AdbServer
from device_farm.virtual import VirtualPhone
from device_farm.virtual.apps import default_apps
from device_farm.virtual.intents import Intent
from device_farm.virtual.system import AndroidSystem

SET_ALARM = ("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR {h} "
             "--ei android.intent.extra.alarm.MINUTES 0 --ez android.intent.extra.alarm.SKIP_UI true")


def median_ms(fn: Callable[[], object], iterations: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


class KeptAliveRpc:
    """JSON-RPC over one HTTP/1.1 keep-alive stream, headers and body in one write."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""

    def call(self, method: str, *params: object) -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        self._sock.sendall(b"POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        while b"\r\n\r\n" not in self._buf:
            self._buf += self._recv()
        head, _, self._buf = self._buf.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(self._buf) < length:
            self._buf += self._recv()
        payload, self._buf = self._buf[:length], self._buf[length:]
        return json.loads(payload)["result"]

    def _recv(self) -> bytes:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise ConnectionError("stream closed")
        return chunk


def render_ms(iterations: int) -> dict[str, float]:
    """Paint and encode in-process (no transport), uncached and cached."""
    system = AndroidSystem("bench", default_apps())
    try:
        clock = system.apps["com.google.android.deskclock"]
        for hour in range(6):
            clock.set_alarm(hour + 6, 30, "Wake up" if hour == 0 else "", True, 0)
        system.start_activity(Intent("android.intent.action.SHOW_ALARMS"))
        root, status = system.window(), system.status_bar()

        def png() -> None:
            system.renderer.image(root, status).save(io.BytesIO(), "PNG", compress_level=1)

        return {
            "paint": median_ms(lambda: system.renderer.image(root, status), iterations),
            "paint+png": median_ms(png, max(10, iterations // 4)),
            "cached": median_ms(system.screenshot, iterations),
        }
    finally:
        system.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()

    with AdbServer() as server, VirtualPhone() as phone:
        serial = server.connect_device(phone.address)
        device = server.client.device(serial)
        shell_ms = median_ms(lambda: device.shell("echo hi"), args.iterations)

        rpc = KeptAliveRpc(device.create_connection("tcp", 9008))
        kept_ms = median_ms(lambda: rpc.call("dumpWindowHierarchy", False, 50), args.iterations)

        d = u2.connect(device)
        stock_ms = median_ms(lambda: d.jsonrpc.dumpWindowHierarchy(False, 50), max(10, args.iterations // 5))

        shots = max(10, args.iterations // 5)
        screencap_ms = median_ms(lambda: device.shell(["screencap", "-p"], encoding=None), shots)
        u2_shot_ms = median_ms(d.screenshot, shots)

        for hour in range(20):
            device.shell(SET_ALARM.format(h=hour))
        device.sync.push(b"x" * 1_000_000, "/sdcard/Download/blob.bin")
        device.shell("am start -a android.intent.action.SHOW_ALARMS")
        save_ms = median_ms(lambda: phone.save_snapshot("bench"), args.iterations)
        restore_ms = median_ms(lambda: phone.restore_snapshot("bench"), args.iterations)
    render = render_ms(args.iterations)

    print(f"iterations                                   {args.iterations}")
    print(f"adbutils shell('echo hi')                    {shell_ms:8.2f} ms median")
    print(f"dumpWindowHierarchy, one kept-alive stream   {kept_ms:8.2f} ms median")
    print(f"dumpWindowHierarchy, uiautomator2 as shipped {stock_ms:8.2f} ms median")
    print(f"ratio shipped / kept-alive                   {stock_ms / kept_ms:8.1f}x")
    print(f"render Clock screen: paint                   {render['paint']:8.2f} ms median")
    print(f"render Clock screen: paint + PNG encode      {render['paint+png']:8.2f} ms median")
    print(f"render Clock screen: unchanged (cached PNG)  {render['cached']:8.2f} ms median")
    print(f"adbutils shell(['screencap','-p']) (cached)  {screencap_ms:8.2f} ms median")
    print(f"uiautomator2 screenshot() (cached JPEG)      {u2_shot_ms:8.2f} ms median")
    print(f"snapshot save (20 alarms, 1 MB file)         {save_ms:8.2f} ms median")
    print(f"snapshot restore (target < 50 ms)            {restore_ms:8.2f} ms median"
          f"   ratio to target {restore_ms / 50:.3f}")


if __name__ == "__main__":
    main()
