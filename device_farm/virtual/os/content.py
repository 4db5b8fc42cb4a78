"""Content providers backed by an in-memory SQLite database, and content URIs.

A provider maps URI paths (`alarms`, `data/phones`, ...) to tables or views; a trailing
numeric segment selects one row by `_id`. Selections and sort orders are SQL fragments
passed to SQLite, as Android's SQLiteQueryBuilder does, so `content query --where` has real
semantics. Errors carry the Java exception text `content` prints.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence


class ProviderError(Exception):
    """A provider refused the call; the message is the Java exception line."""


@dataclass(frozen=True)
class ContentUri:
    authority: str
    path: tuple[str, ...]

    @classmethod
    def parse(cls, uri: str) -> "ContentUri":
        if not uri.startswith("content://"):
            raise ProviderError(f"java.lang.IllegalArgumentException: Unsupported scheme in {uri}")
        authority, _, path = uri[len("content://") :].partition("/")
        return cls(authority, tuple(p for p in path.split("/") if p))

    def __str__(self) -> str:
        return f"content://{self.authority}/" + "/".join(self.path)


@dataclass(frozen=True)
class Table:
    """A URI path served by a table (writable) or a view (read-only)."""

    name: str
    writable: bool = True


class SqliteProvider:
    """Base class: subclasses set AUTHORITY, SCHEMA (SQL script) and PATHS."""

    AUTHORITY = ""
    SCHEMA = ""
    PATHS: dict[tuple[str, ...], Table] = {}

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.db.executescript(self.SCHEMA)

    def close(self) -> None:
        self.db.close()

    def _target(self, uri: ContentUri) -> tuple[Table, int | None]:
        path, row_id = uri.path, None
        if path and path[-1].isdigit():
            path, row_id = path[:-1], int(path[-1])
        table = self.PATHS.get(path)
        if table is None:
            raise ProviderError(f"java.lang.IllegalArgumentException: Unknown URI {uri}")
        return table, row_id

    @staticmethod
    def _where(selection: str | None, row_id: int | None) -> tuple[str, list[Any]]:
        clauses, args = [], []
        if row_id is not None:
            clauses.append("_id = ?")
            args.append(row_id)
        if selection:
            clauses.append(f"({selection})")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def _run(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, list(args))
        except sqlite3.Error as exc:
            raise ProviderError(
                f"android.database.sqlite.SQLiteException: {exc} (code 1 SQLITE_ERROR): , while compiling: {sql}"
            ) from exc

    def query(self, uri: ContentUri, projection: Sequence[str] | None = None,
              selection: str | None = None, sort: str | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        table, row_id = self._target(uri)
        cols = ", ".join(projection) if projection else "*"
        where, args = self._where(selection, row_id)
        order = f" ORDER BY {sort}" if sort else ""
        cur = self._run(f"SELECT {cols} FROM {table.name}{where}{order}", args)
        columns = [d[0] for d in cur.description]
        return columns, cur.fetchall()

    def insert(self, uri: ContentUri, values: dict[str, Any]) -> ContentUri:
        table, _ = self._target(uri)
        if not table.writable:
            raise ProviderError(f"java.lang.UnsupportedOperationException: Cannot insert into {uri}")
        return ContentUri(uri.authority, uri.path + (str(self._insert_row(table.name, values)),))

    def _insert_row(self, table: str, values: dict[str, Any]) -> int:
        names = list(values)
        sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        if not names:
            sql = f"INSERT INTO {table} DEFAULT VALUES"
        cur = self._run(sql, [values[n] for n in names])
        assert cur.lastrowid is not None
        return cur.lastrowid

    def update(self, uri: ContentUri, values: dict[str, Any], selection: str | None = None) -> int:
        table, row_id = self._target(uri)
        if not table.writable or not values:
            raise ProviderError(f"java.lang.UnsupportedOperationException: Cannot update {uri}")
        where, args = self._where(selection, row_id)
        sets = ", ".join(f"{n} = ?" for n in values)
        return self._run(f"UPDATE {table.name} SET {sets}{where}", list(values.values()) + args).rowcount

    def delete(self, uri: ContentUri, selection: str | None = None) -> int:
        table, row_id = self._target(uri)
        if not table.writable:
            raise ProviderError(f"java.lang.UnsupportedOperationException: Cannot delete from {uri}")
        where, args = self._where(selection, row_id)
        return self._run(f"DELETE FROM {table.name}{where}", args).rowcount
