"""PhoneProcesses: virtual phones spread over worker processes, one PhoneLoop in each.

One Python process serves its phones on about one core (the interpreter lock), so a host with
more cores runs its phones in several processes: ``PhoneProcesses(count=32, processes=8)``
starts 8 workers with 4 phones each and returns once every phone listens. Each phone keeps its
own port and serial; phone ``i`` listens on ``port + i`` (any free port when ``port`` is 0).
Phones are reached through adb only, as in a single process; ``stop()`` ends the workers.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Sequence

from device_farm.errors import DeviceError

_READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class ServedPhone:
    serial: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class PhoneStartError(DeviceError):
    """A worker could not start its phones (a port in use, a bad key file...)."""


def _worker(ports: Sequence[int], host: str, keys: list[Path] | None, accept_new_keys: bool, conn: Connection) -> None:
    """Start the phones, report them (or the error) on ``conn``, serve until the parent says
    stop or goes away (its end of the pipe closes)."""
    from device_farm.virtual.adbd.auth import load_keys
    from device_farm.virtual.phone import VirtualPhone
    from device_farm.virtual.phone_loop import PhoneLoop

    loop = PhoneLoop().start()
    phones: list[VirtualPhone] = []
    try:
        try:
            trusted = load_keys(keys) if keys is not None else None  # read once for all its phones
            for port in ports:
                phone = VirtualPhone(port=port, host=host, adb_keys=trusted, accept_new_keys=accept_new_keys)
                phones.append(phone.start(loop))
        except Exception as exc:  # reported to the parent, which stops everything
            conn.send(f"{type(exc).__name__}: {exc}")
            return
        conn.send([(p.serial, p.host, p.port) for p in phones])
        conn.poll(None)  # a stop message, or EOF when the parent is gone
    except (KeyboardInterrupt, EOFError, OSError):
        pass
    finally:
        for phone in phones:
            phone.stop()
        loop.stop()


class PhoneProcesses:
    """``count`` phones over ``processes`` worker processes (spawned; construction does no I/O)."""

    def __init__(self, count: int, processes: int, *, host: str = "127.0.0.1", port: int = 0,
                 adb_keys: Sequence[Path] | None = None, accept_new_keys: bool = False) -> None:
        if not 1 <= processes <= count:
            raise ValueError(f"processes must be 1..{count}, got {processes}")
        self.count, self.processes, self.host, self.port = count, processes, host, port
        self._keys = list(adb_keys) if adb_keys is not None else None
        self._accept = accept_new_keys
        self._workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        self.phones: list[ServedPhone] = []

    def start(self) -> PhoneProcesses:
        ctx = multiprocessing.get_context("spawn")
        ports = [self.port + i if self.port else 0 for i in range(self.count)]
        shares = [ports[i::self.processes] for i in range(self.processes)]
        for n, share in enumerate(shares):
            ours, theirs = ctx.Pipe()
            worker = ctx.Process(target=_worker, args=(share, self.host, self._keys, self._accept, theirs),
                                 name=f"virtual-phones-{n}", daemon=True)
            worker.start()
            theirs.close()
            self._workers.append((worker, ours))
        try:
            for _, conn in self._workers:
                try:
                    if not conn.poll(_READY_TIMEOUT):
                        raise PhoneStartError(f"a phone worker did not start within {_READY_TIMEOUT:.0f} s")
                    got = conn.recv()
                except EOFError:
                    raise PhoneStartError("a phone worker exited before its phones started") from None
                if isinstance(got, str):
                    raise PhoneStartError(f"a phone worker failed to start: {got}")
                self.phones += [ServedPhone(*row) for row in got]
        except BaseException:  # Ctrl-C while waiting included: leave no worker behind
            self.stop()
            raise
        if self.port:
            self.phones.sort(key=lambda p: p.port)
        return self

    def stop(self) -> None:
        for _, conn in self._workers:
            try:
                conn.send("stop")
            except OSError:
                pass  # that worker is gone already
            conn.close()
        for worker, _ in self._workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
        self._workers = []

    def __enter__(self) -> PhoneProcesses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
