"""One SQLite file behind SQLAlchemy, as every store of the runtime opens it.

WAL mode (readers never block the writer), ``synchronous=NORMAL``, foreign keys on and a busy
timeout, so several processes can share a file. A store subclasses :class:`SqliteFile`, names
its tables' ``metadata`` and adds what it needs on open in :meth:`SqliteFile._opened`.
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar, Self

from sqlalchemy import MetaData, create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from planner_runtime.errors import StoreError, StoreNotFound


class SqliteFile:
    """Construct with a path (no I/O), then :meth:`open` or use as a context manager."""

    metadata: ClassVar[MetaData]
    what: ClassVar[str] = "store"  # for error messages
    mmap_bytes: ClassVar[int] = 0  # PRAGMA mmap_size: read this much of the file through a memory map

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        self.create = create  # False: a missing file is an error (a mistyped --store is never made)
        self._engine: Engine | None = None

    def open(self) -> Self:
        if not self.create and not self.path.is_file():
            raise StoreNotFound(f"no {self.what} at {self.path}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(f"sqlite:///{self.path}")
            event.listen(engine, "connect", functools.partial(sqlite_pragmas, mmap_bytes=self.mmap_bytes))
            self.metadata.create_all(engine)
            self._engine = engine
            self._opened()
        except (SQLAlchemyError, OSError) as exc:
            self.close()
            raise StoreError(f"cannot open {self.what} {self.path}: {exc}") from exc
        return self

    def _opened(self) -> None:
        """Runs once the file is open and its tables exist."""

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError(f"{self.what} is not open")
        return self._engine


def aware(value: datetime) -> datetime:
    """SQLite returns naive datetimes; ours are all UTC."""
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def sqlite_pragmas(dbapi_conn, _record, *, mmap_bytes: int = 0) -> None:  # noqa: ANN001 - DB-API objects
    cur = dbapi_conn.cursor()
    if mmap_bytes:
        cur.execute(f"PRAGMA mmap_size={int(mmap_bytes)}")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()
