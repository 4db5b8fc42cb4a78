"""The pool's shared state on one host: a lock file and a fault record per device.

Leases are ``fcntl.flock`` locks on ``<state dir>/<device>.lock``: exclusive across threads
(each lease opens its own file description) and across processes, and the OS drops the lock
when its holder dies, so a killed worker never leaks a lease. The holder writes who it is
into the lock file for ``planner-agent devices``. Fault counts, quarantine and the last
health record live in ``<device>.json``, read and rewritten under a lock, so every process
on the host sees the same quarantine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any, Callable

from device_farm.health import DeviceHealth


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: process id and host, a label, since when (wall clock)."""

    pid: int
    host: str
    name: str
    since: float

    @classmethod
    def me(cls, name: str) -> Holder:
        return cls(pid=os.getpid(), host=socket.gethostname(), name=name, since=time.time())


@dataclass(frozen=True)
class DeviceRecord:
    """A device's fault history and last known health, shared by every process on the host."""

    faults: int = 0  # infra faults ever counted
    consecutive: int = 0  # infra faults since the last clean lease
    quarantines: int = 0  # quarantines in a row (drives the backoff)
    quarantined_until: float = 0.0  # wall clock; 0 when in service
    last_fault: str = ""  # "<code>: <message>"
    health: DeviceHealth | None = None

    @property
    def quarantined(self) -> bool:
        return self.quarantined_until > 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["health"] = self.health.to_json() if self.health else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeviceRecord:
        health = data.pop("health", None)
        if health:
            health.pop("healthy", None)
            health["problems"] = tuple(health.get("problems", ()))
            health = DeviceHealth(**health)
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields, health=health)


class LeaseLock:
    """A held device lock; ``release()`` is idempotent."""

    def __init__(self, file: IO[str], holder: Holder) -> None:
        self._file: IO[str] | None = file
        self.holder = holder

    @property
    def held(self) -> bool:
        return self._file is not None

    def release(self) -> None:
        if self._file is None:
            return
        try:
            self._file.truncate(0)
            self._file.flush()
        finally:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class PoolState:
    """Lock files and fault records under ``root`` (created on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str, suffix: str) -> Path:
        # Readable name plus a hash, so distinct keys never share a file.
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[-80:]
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / f"{stem}-{digest}{suffix}"

    # -- leases --------------------------------------------------------------------------
    def try_lock(self, key: str, holder: Holder) -> LeaseLock | None:
        """Take the device's lock without waiting; None when someone holds it."""
        file = open(self._path(key, ".lock"), "a+", encoding="utf-8")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            return None
        file.truncate(0)
        file.write(json.dumps(asdict(holder)))
        file.flush()
        return LeaseLock(file, holder)

    def holder(self, key: str) -> Holder | None:
        """Who holds the device's lock now (any process on the host), or None when free."""
        path = self._path(key, ".lock")
        if not path.exists():
            return None
        with open(path, "r", encoding="utf-8") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    return Holder(**json.loads(file.read()))
                except (ValueError, TypeError):  # the holder is still writing its name
                    return Holder(pid=0, host="", name="?", since=0.0)
            fcntl.flock(file, fcntl.LOCK_UN)
            return None

    # -- fault records -------------------------------------------------------------------
    def record(self, key: str) -> DeviceRecord:
        path = self._path(key, ".json")
        if not path.exists():
            return DeviceRecord()
        with open(path, "r", encoding="utf-8") as file:
            fcntl.flock(file, fcntl.LOCK_SH)
            return self._parse(file.read())

    def update(self, key: str, change: Callable[[DeviceRecord], DeviceRecord]) -> DeviceRecord:
        """Read, change and write the device's record atomically across processes."""
        with open(self._path(key, ".json"), "a+", encoding="utf-8") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            file.seek(0)
            new = change(self._parse(file.read()))
            file.seek(0)
            file.truncate(0)
            file.write(json.dumps(new.to_json()))
            file.flush()
            return new

    def set_health(self, key: str, health: DeviceHealth) -> DeviceRecord:
        return self.update(key, lambda r: replace(r, health=health))

    @staticmethod
    def _parse(text: str) -> DeviceRecord:
        try:
            return DeviceRecord.from_json(json.loads(text)) if text.strip() else DeviceRecord()
        except (ValueError, TypeError):  # a torn or foreign file: start the record afresh
            return DeviceRecord()
