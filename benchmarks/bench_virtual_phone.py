"""Latency of the virtual phone through the real adb server.

Prints medians of (1) `shell:echo hi` through adbutils as shipped, and (2) a
`dumpWindowHierarchy` JSON-RPC over one kept-alive `tcp:9008` stream, next to the same call
made the stock uiautomator2 way (a new stream per request), as a ratio; (3) screen
rendering (paint, PNG encode, cached repeat) and screenshots through adbutils and
uiautomator2; (4) whole-phone snapshot save and restore on a phone holding some state;
(5) scale: request throughput of 16 phones against one (shell echo through the lean
`AdbHost` client, and dumpWindowHierarchy over kept-alive streams, one client thread per
phone), with the phones in one process and spread over worker processes, and the memory
each idle phone adds (RSS growth over 16 phones, measured in a fresh process); (6) `adb
connect` until the phone is online, without AUTH and with AUTH against the server's own key,
side by side, and pushing 1 MB with `adb push` (sync) next to `adb exec-in 'cat > f'`.

    python benchmarks/bench_virtual_phone.py --iterations 200
    python benchmarks/bench_virtual_phone.py --scale-only --seconds 3
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import adbutils
import uiautomator2 as u2

from device_farm.adb.host import AdbHost
from device_farm.adb.server import AdbServer
from device_farm.virtual import PhoneLoop, VirtualPhone
from device_farm.virtual.apps import default_apps
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.os.system import AndroidSystem

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


def drive(serials: list[str], adb_host: str, adb_port: int, kind: str, seconds: float) -> tuple[int, float]:
    """One client thread per serial, all started together: (requests answered in `seconds`,
    CPU seconds this process used meanwhile, phones and clients together)."""
    counts = [0] * len(serials)
    barrier = threading.Barrier(len(serials) + 1)
    stop_at = [0.0]

    def client(i: int, serial: str) -> None:
        host = AdbHost(serial, adb_host, adb_port)
        if kind == "shell":
            call: Callable[[], object] = lambda: host.shell("echo hi")
        else:
            rpc = KeptAliveRpc(host.open("tcp:9008"))
            call = lambda: rpc.call("dumpWindowHierarchy", False, 50)
        call()
        barrier.wait()
        n = 0
        while time.perf_counter() < stop_at[0]:
            call()
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=client, args=(i, s), daemon=True) for i, s in enumerate(serials)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds + 0.5  # generous until everyone is at the barrier
    barrier.wait()
    cpu = time.process_time()
    stop_at[0] = time.perf_counter() + seconds
    for t in threads:
        t.join()
    return sum(counts), time.process_time() - cpu


def phones_worker(n: int, adb_host: str, adb_port: int, kind: str, seconds: float,
                  start: "multiprocessing.synchronize.Barrier") -> tuple[int, float]:
    """A worker process: host `n` phones and drive each from its own thread."""
    server = AdbServer(host=adb_host, port=adb_port)
    phones = [VirtualPhone().start() for _ in range(n)]
    try:
        serials = [server.connect_device(p.address) for p in phones]
        start.wait()
        return drive(serials, adb_host, adb_port, kind, seconds)
    finally:
        for phone in phones:
            phone.stop()


def throughput(server: AdbServer, phones: int, procs: int, kind: str, seconds: float,
               shared: bool = False) -> tuple[float, float]:
    """(requests per second, CPU cores the phone processes used) of `phones` phones spread
    over `procs` processes (1 = this one), one client thread per phone beside them; with
    `shared`, the phones of this process run on one PhoneLoop instead of a thread each."""
    if procs == 1:
        loop = PhoneLoop().start() if shared else None
        started = [VirtualPhone().start(loop) for _ in range(phones)]
        try:
            serials = [server.connect_device(p.address) for p in started]
            count, cpu = drive(serials, server.host, server.port, kind, seconds)
            return count / seconds, cpu / seconds
        finally:
            for phone in started:
                server.client.disconnect(phone.address)
                phone.stop()
            if loop is not None:
                loop.stop()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Barrier(procs)
        with ctx.Pool(procs) as pool:
            jobs = [pool.apply_async(phones_worker, (phones // procs, server.host, server.port, kind,
                                                     seconds, start)) for _ in range(procs)]
            results = [job.get(timeout=120) for job in jobs]
            return sum(r[0] for r in results) / seconds, sum(r[1] for r in results) / seconds


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def idle_memory_worker(adb_host: str, adb_port: int, count: int) -> tuple[float, float, float]:
    """(MB for the first phone, MB per phone for `count` more idle and online, MB per phone
    once each has also dumped its hierarchy and rendered a screenshot)."""
    server = AdbServer(host=adb_host, port=adb_port)
    gc.collect()
    before_first = rss_mb()
    first = VirtualPhone().start()
    server.connect_device(first.address)
    gc.collect()
    before = rss_mb()
    phones = [VirtualPhone().start() for _ in range(count)]
    for phone in phones:
        server.connect_device(phone.address)
    time.sleep(1.0)
    gc.collect()
    after = rss_mb()
    for phone in phones:
        host = AdbHost(phone.address, adb_host, adb_port)
        host.shell("uiautomator dump /sdcard/d.xml; screencap -p > /dev/null")
    gc.collect()
    used = rss_mb()
    for phone in [first, *phones]:
        phone.stop()
    return before - before_first, (after - before) / count, (used - before) / count


def scale_report(seconds: float) -> None:
    cpus = len(os.sched_getaffinity(0))
    with AdbServer() as server:
        print(f"scale: {cpus} CPU cores available to this process; {seconds:.1f} s per run")
        for kind, label in (("shell", "shell echo via AdbHost"), ("hierarchy", "dumpWindowHierarchy kept-alive")):
            (one, c1), (sixteen, c16), (pooled, cp), (spread, c4) = (
                throughput(server, n, procs, kind, seconds, shared)
                for n, procs, shared in ((1, 1, False), (16, 1, False), (16, 1, True), (16, 4, False)))
            print(f"{label:32s} 1 phone, 1 thread     {one:8.0f} req/s   phone+client process CPU {c1:4.2f} cores")
            print(f"{label:32s} 16 phones, 1 process  {sixteen:8.0f} req/s   ratio {sixteen / one:5.2f}x "
                  f"(target >= 8x)   CPU {c16:4.2f} cores   (a loop thread per phone)")
            print(f"{label:32s} 16 phones, 1 process  {pooled:8.0f} req/s   ratio {pooled / one:5.2f}x "
                  f"(target >= 8x)   CPU {cp:4.2f} cores   (one shared PhoneLoop)")
            print(f"{label:32s} 16 phones, 4 procs    {spread:8.0f} req/s   ratio {spread / one:5.2f}x"
                  f"                  CPU {c4:4.2f} cores")
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            first, per_phone, used = pool.apply(idle_memory_worker, (server.host, server.port, 16))
        print(f"phone memory: first phone (on top of the imported code)   {first:6.1f} MB")
        print(f"phone memory: RSS growth per idle online phone (16 more)  {per_phone:6.1f} MB"
              f"   ratio to 40 MB target {per_phone / 40:.2f}")
        print(f"phone memory: per phone after a dump and a screenshot     {used:6.1f} MB"
              f"   ratio to 40 MB target {used / 40:.2f}")


def connect_ms(server: AdbServer, phone: VirtualPhone, iterations: int) -> float:
    """Median time from `adb connect` to the phone listed online, reconnecting each time."""
    def once() -> None:
        server.connect_device(phone.address)
        server.client.disconnect(phone.address)
    return median_ms(once, iterations, warmup=2)


def auth_and_transfer_report(iterations: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-adb-home-") as home:
        key = Path(home) / ".android" / "adbkey"
        key.parent.mkdir()
        subprocess.run([adbutils.adb_path(), "keygen", str(key)], check=True, capture_output=True)
        with AdbServer(home=Path(home)) as server, VirtualPhone() as open_phone, \
                VirtualPhone(adb_keys=key.with_name("adbkey.pub")) as locked:
            plain = connect_ms(server, open_phone, iterations)
            authed = connect_ms(server, locked, iterations)
            serial = server.connect_device(open_phone.address)
            blob = Path(home) / "blob.bin"
            blob.write_bytes(os.urandom(1_000_000))
            adb = [adbutils.adb_path(), "-H", server.host, "-P", str(server.port), "-s", serial]

            def exec_in() -> None:
                with blob.open("rb") as stdin:
                    subprocess.run([*adb, "exec-in", "cat > /data/local/tmp/in.bin"], stdin=stdin, check=True)
            push_ms = median_ms(lambda: subprocess.run([*adb, "push", "-q", str(blob), "/data/local/tmp/p.bin"],
                                                       check=True, capture_output=True), iterations, warmup=2)
            exec_in_ms = median_ms(exec_in, iterations, warmup=2)
    print(f"adb connect until online, no AUTH            {plain:8.2f} ms median")
    print(f"adb connect until online, AUTH (RSA verify)  {authed:8.2f} ms median   ratio {authed / plain:5.2f}x")
    print(f"1 MB: adb push (sync)                        {push_ms:8.2f} ms median")
    print(f"1 MB: adb exec-in 'cat > f'                  {exec_in_ms:8.2f} ms median   ratio {exec_in_ms / push_ms:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each throughput run")
    parser.add_argument("--scale-only", action="store_true", help="only the 16-phone figures")
    args = parser.parse_args()
    if args.scale_only:
        scale_report(args.seconds)
        return

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
    auth_and_transfer_report(max(5, args.iterations // 10))
    scale_report(args.seconds)


if __name__ == "__main__":
    main()
