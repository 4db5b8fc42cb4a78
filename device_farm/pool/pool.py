"""DevicePool: exclusive leases on phones from many sources, with health checks and quarantine.

``with pool.lease(timeout=30, require=Requirement(min_battery=20)) as device:`` hands out one
connected :class:`~device_farm.Device` that nobody else (no thread, no process on the host)
holds until the block ends. Devices come from :class:`~device_farm.sources.DeviceSource`
objects: adb servers, built-in virtual phones, Appium endpoints. An infra fault raised in the
block (a :class:`DeviceError` with ``infra=True``) is counted, or reported with
:meth:`Lease.report`; after a faulty lease the device is reconnected if its transport dropped
and re-probed, and it is quarantined when the probe fails or after ``max_faults`` faults in a
row, for an exponentially growing backoff, then re-probed before it is leased again.
:meth:`Lease.restore_clean` puts the leased device back in a known state where its source can
(virtual phones); callers need not know which kind of device they hold.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from device_farm import Device
from device_farm.errors import DeviceError, DeviceOffline, DeviceUnavailable
from device_farm.health import DeviceHealth
from device_farm.pool.state import DeviceRecord, Holder, LeaseLock, PoolState
from device_farm.sources import READY, CleanSlate, DeviceCandidate, DeviceSource


@dataclass(frozen=True)
class Requirement:
    """What a lease asks of a device; ``None`` fields do not constrain."""

    serial: str | None = None
    source: str | None = None
    model: str | None = None
    min_battery: int | None = None
    min_free_mb: int | None = None

    def admits(self, candidate: DeviceCandidate) -> bool:
        return ((self.serial is None or candidate.serial == self.serial)
                and (self.source is None or candidate.source == self.source)
                and (self.model is None or candidate.model == self.model))

    @property
    def needs_health(self) -> bool:
        return self.min_battery is not None or self.min_free_mb is not None

    def satisfied_by(self, health: DeviceHealth) -> bool:
        return ((self.min_battery is None or (health.battery or 0) >= self.min_battery)
                and (self.min_free_mb is None or (health.free_mb or 0) >= self.min_free_mb))


@dataclass(frozen=True)
class QuarantinePolicy:
    max_faults: int = 3  # infra faults without a clean lease in between
    backoff_s: float = 30.0  # first quarantine; doubles each time the re-probe fails
    max_backoff_s: float = 900.0

    def backoff(self, quarantines: int) -> float:
        return min(self.max_backoff_s, self.backoff_s * 2 ** max(0, quarantines - 1))


@dataclass(frozen=True)
class DeviceStatus:
    """One row of ``planner-agent devices``: the device, its health, holder and faults."""

    candidate: DeviceCandidate
    health: DeviceHealth | None
    holder: Holder | None
    record: DeviceRecord

    def to_json(self) -> dict[str, Any]:
        r = self.record
        return {
            "key": self.candidate.key, "serial": self.candidate.serial, "source": self.candidate.source,
            "state": self.candidate.state, "model": self.candidate.model,
            "health": self.health.to_json() if self.health else None,
            "holder": None if self.holder is None else {"pid": self.holder.pid, "host": self.holder.host,
                                                        "name": self.holder.name, "since": self.holder.since},
            "faults": r.faults, "consecutive_faults": r.consecutive, "last_fault": r.last_fault,
            "quarantined": r.quarantined, "quarantined_until": r.quarantined_until or None,
        }


class Lease:
    """One lease, entered with ``with``; the device is released on exit whatever happens."""

    def __init__(self, pool: DevicePool, timeout: float, require: Requirement, holder: str) -> None:
        self._pool, self.timeout, self.require, self.holder = pool, timeout, require, holder
        self.candidate: DeviceCandidate | None = None
        self.device: Device | None = None
        self.health: DeviceHealth | None = None
        self.faults: list[DeviceError] = []
        self._lock: LeaseLock | None = None
        self._source: DeviceSource | None = None

    def report(self, exc: DeviceError) -> None:
        """Count an infra fault the holder caught itself (non-infra errors are not counted)."""
        if exc.infra and exc not in self.faults:
            self.faults.append(exc)

    def restore_clean(self) -> bool:
        """Put the held device back in its source's clean state; False when the source keeps
        none (a real phone holds whatever its last user left: only a task's setup resets it).
        A failed restore raises the source's DeviceError."""
        assert self.candidate is not None, "restore_clean() needs a held lease (inside `with`)"
        if not isinstance(self._source, CleanSlate):
            return False
        self._source.restore_clean(self.candidate)
        return True

    def __enter__(self) -> Device:
        self._pool._acquire(self)
        assert self.device is not None
        return self.device

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, DeviceError):
            self.report(exc)
        self._pool._release(self)


class DevicePool:
    """Devices from ``sources``; leases and records live in ``state_dir`` (shared on the host).

    Construction does no I/O; ``start()`` (or ``with pool:``) starts the sources.
    """

    def __init__(self, sources: Iterable[DeviceSource], *, state_dir: Path | None = None,
                 quarantine: QuarantinePolicy = QuarantinePolicy(), probe_on_lease: bool = True,
                 poll_s: float = 0.1, discover_ttl_s: float = 1.0) -> None:
        self.sources = list(sources)
        self.state = PoolState(state_dir or Path(tempfile.gettempdir()) / f"planner-agent-pool-{os.getuid()}")
        self.quarantine = quarantine
        self.probe_on_lease = probe_on_lease
        self.poll_s, self.discover_ttl_s = poll_s, discover_ttl_s
        self.source_errors: dict[str, str] = {}
        self._cond = threading.Condition()
        self._discovering = threading.Lock()  # one thread refreshes the list, the others reuse it
        self._held: dict[str, Lease] = {}
        self._candidates: list[tuple[DeviceCandidate, DeviceSource]] = []
        self._discovered_at = float("-inf")
        self._last_leased: dict[str, float] = {}

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> DevicePool:
        for source in self.sources:
            source.start()
        return self

    def close(self) -> None:
        for source in self.sources:
            source.close()

    def __enter__(self) -> DevicePool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- discovery -----------------------------------------------------------------------
    def discover(self, *, fresh: bool = False) -> list[tuple[DeviceCandidate, DeviceSource]]:
        """Every device of every source (cached for ``discover_ttl_s``)."""
        asked = time.monotonic()
        with self._discovering:
            if self._discovered_at >= asked or (not fresh and asked - self._discovered_at < self.discover_ttl_s):
                return list(self._candidates)
            found: list[tuple[DeviceCandidate, DeviceSource]] = []
            for source in self.sources:
                try:
                    found += [(c, source) for c in source.discover()]
                    self.source_errors.pop(source.name, None)
                except DeviceError as exc:
                    self.source_errors[source.name] = f"{exc.code}: {exc}"
            self._candidates, self._discovered_at = found, time.monotonic()
            return list(found)

    def status(self, *, probe: bool = True) -> list[DeviceStatus]:
        """A row per device; with ``probe``, devices nobody holds are probed now."""
        rows = []
        for candidate, source in self.discover(fresh=True):
            holder = self.state.holder(candidate.key)
            record = self.state.record(candidate.key)
            health = record.health
            if probe and holder is None:
                lock = self.state.try_lock(candidate.key, Holder.me("pool probe"))
                if lock is not None:
                    try:
                        health = source.probe(candidate)
                        record = self.state.set_health(candidate.key, health)
                    finally:
                        lock.release()
            rows.append(DeviceStatus(candidate, health, holder, record))
        return rows

    def held(self) -> list[str]:
        """Keys of the devices this process holds now."""
        with self._cond:
            return sorted(self._held)

    # -- leases --------------------------------------------------------------------------
    def lease(self, timeout: float = 30.0, require: Requirement | None = None, holder: str = "") -> Lease:
        """A lease to enter with ``with``; raises DeviceUnavailable on entry after ``timeout``."""
        return Lease(self, timeout, require or Requirement(), holder or f"pid {os.getpid()}")

    def _acquire(self, lease: Lease) -> None:
        deadline = time.monotonic() + lease.timeout
        while True:
            candidates = [(c, s) for c, s in self.discover() if lease.require.admits(c)]
            candidates.sort(key=lambda cs: self._last_leased.get(cs[0].key, 0.0))
            for candidate, source in candidates:
                if self._try(lease, candidate, source):
                    return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeviceUnavailable(self._why_unavailable(lease, candidates))
            with self._cond:
                self._cond.wait(min(self.poll_s, remaining))

    def _try(self, lease: Lease, candidate: DeviceCandidate, source: DeviceSource) -> bool:
        if self.state.record(candidate.key).quarantined_until > time.time():
            return False
        lock = self.state.try_lock(candidate.key, Holder.me(lease.holder))
        if lock is None:
            return False
        device: Device | None = None
        try:
            record = self.state.record(candidate.key)  # again: another process may have changed it
            if record.quarantined_until > time.time():
                lock.release()
                return False
            if not candidate.ready and not source.reconnect(candidate):
                self._fault(candidate.key, DeviceOffline(f"{candidate.serial} is {candidate.state}"), None)
                lock.release()
                return False
            health = None
            if self.probe_on_lease or record.quarantined or lease.require.needs_health:
                health = source.probe(candidate)
                self.state.set_health(candidate.key, health)
                if not health.healthy:
                    self._fault(candidate.key, _unhealthy(candidate, health), health)
                    lock.release()
                    return False
                if record.quarantined:
                    self.state.update(candidate.key, lambda r: replace(r, quarantined_until=0.0, consecutive=0))
                if not lease.require.satisfied_by(health):
                    lock.release()
                    return False
            device = source.open(candidate)
            device.connect()
        except DeviceError as exc:
            if device is not None:
                device.close()
            if exc.infra:
                self._fault(candidate.key, exc, source.probe(candidate))
            lock.release()
            return False
        except BaseException:
            lock.release()
            raise
        lease.candidate, lease.device, lease.health = candidate, device, health
        lease._lock, lease._source = lock, source
        with self._cond:
            self._held[candidate.key] = lease
            self._last_leased[candidate.key] = time.monotonic()
        return True

    def _release(self, lease: Lease) -> None:
        candidate, lock, source = lease.candidate, lease._lock, lease._source
        if candidate is None or lock is None or source is None:
            return
        try:
            if lease.device is not None:
                lease.device.close()
            if lease.faults:
                self._after_faults(lease.faults, candidate, source)
            else:
                self.state.update(candidate.key, lambda r: replace(r, consecutive=0, quarantines=0))
        finally:
            lock.release()
            with self._cond:
                self._held.pop(candidate.key, None)
                self._cond.notify_all()

    def _after_faults(self, faults: list[DeviceError], candidate: DeviceCandidate, source: DeviceSource) -> None:
        """Count a lease's faults, bring a dropped device back, quarantine a sick one."""
        for exc in faults[:-1]:
            self._fault(candidate.key, exc, None, judge=False)
        if isinstance(faults[-1], DeviceOffline):
            source.reconnect(candidate)
        self._fault(candidate.key, faults[-1], source.probe(candidate))

    def _fault(self, key: str, exc: DeviceError, health: DeviceHealth | None, *, judge: bool = True) -> DeviceRecord:
        """Count one infra fault; quarantine when ``health`` is bad or too many came in a row."""

        def change(r: DeviceRecord) -> DeviceRecord:
            r = replace(r, faults=r.faults + 1, consecutive=r.consecutive + 1,
                        last_fault=f"{exc.code}: {exc}"[:300], health=health or r.health)
            if judge and ((health is None or not health.healthy) or r.consecutive >= self.quarantine.max_faults):
                q = r.quarantines + 1
                r = replace(r, quarantines=q, quarantined_until=time.time() + self.quarantine.backoff(q))
            return r

        return self.state.update(key, change)

    def _why_unavailable(self, lease: Lease, candidates: list[tuple[DeviceCandidate, DeviceSource]]) -> str:
        if not candidates:
            extra = f" ({'; '.join(self.source_errors.values())})" if self.source_errors else ""
            return f"no device matches {lease.require}{extra}"
        held = sum(1 for c, _ in candidates if self.state.holder(c.key) is not None)
        quarantined = sum(1 for c, _ in candidates if self.state.record(c.key).quarantined)
        return (f"no device leased within {lease.timeout}s: {len(candidates)} match, {held} held, "
                f"{quarantined} quarantined")


def _unhealthy(candidate: DeviceCandidate, health: DeviceHealth) -> DeviceError:
    """The fault a failed probe stands for: offline when the transport is down, else unfit."""
    why = f"{candidate.serial}: " + "; ".join(health.problems)
    return DeviceOffline(why) if health.state != READY else DeviceUnavailable(f"unhealthy: {why}")
