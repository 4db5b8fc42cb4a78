"""One SQLite file behind SQLAlchemy, as every store of the runtime opens it.

WAL mode (readers never block the writer), ``synchronous=NORMAL``, foreign keys on and a busy
timeout, so several processes can share a file. A store subclasses :class:`SqliteFile`, names
its tables' ``metadata``, brings an older file up to date in :meth:`SqliteFile._migrate` and adds
what it needs on open in :meth:`SqliteFile._opened`. Creating the tables and migrating run in one
``BEGIN IMMEDIATE`` transaction: processes that open one new file at once take turns instead of
racing each other's ``CREATE TABLE``.
"""

from __future__ import annotations

import functools
import random
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar, Iterator, Self

from sqlalchemy import MetaData, create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from planner_runtime.errors import StoreError, StoreNotFound

SCHEMA_WAIT_S = 60.0  # how long opening waits for other processes creating or migrating the same file


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
            self._engine = engine
            self._create_schema()
            self._opened()
        except (SQLAlchemyError, OSError, StoreError) as exc:  # StoreError: a file _migrate refuses
            self.close()
            raise StoreError(f"cannot open {self.what} {self.path}: {exc}") from exc
        return self

    def _create_schema(self) -> None:
        """Create the tables and migrate under the schema lock, retried while the file is busy:
        SQLite answers "database is locked" without waiting where waiting could deadlock (a
        connection switching a new file to WAL, a stale read snapshot), and the cure it documents
        is to run the transaction again."""
        deadline = time.monotonic() + SCHEMA_WAIT_S
        while True:
            try:
                with self._schema_lock() as conn:
                    self.metadata.create_all(conn)
                    self._migrate(conn)
                return
            except OperationalError as exc:
                if ("locked" not in str(exc.orig) and "busy" not in str(exc.orig)) or time.monotonic() > deadline:
                    raise
                self.engine.dispose()  # a fresh connection, not one left in a failed state
                time.sleep(random.uniform(0.01, 0.1))

    @contextmanager
    def _schema_lock(self) -> Iterator[Connection]:
        """A connection holding the file's write lock until the block ends (then committed).

        pysqlite begins a transaction only before DML, so the lock is taken explicitly; the busy
        timeout makes a second process wait here until the first has created the schema, and its
        ``create_all`` then finds the tables there.
        """
        with self.engine.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def _migrate(self, conn: Connection) -> None:
        """Bring an older file up to date; runs under the schema lock, after ``create_all``."""

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
    cur.execute("PRAGMA busy_timeout=10000")  # first: switching a new file to WAL waits for the lock too
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
