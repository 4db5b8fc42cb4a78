"""`content://settings/system|secure|global`: Android's SettingsProvider over the same store
the `settings` command reads and writes (`AndroidSystem.settings`).

As on Android the provider is not SQL: a selection is only `name='x'` or `name=?` (anything
else is the IllegalArgumentException "Supported SQL: ..."), a URI may name one setting
(`content://settings/system/screen_brightness`), the columns are `_id`, `name` and `value`,
and `_id`s are handed out once per setting and kept, while sort orders are ignored. An update
needs a `name` in its values (any: the selection or URI says which setting) and changes only a
setting that exists, printing nothing either way.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from device_farm.virtual.os.content import ContentUri, ProviderError

AUTHORITY = "settings"
COLUMNS = ("_id", "name", "value")
_NAME_LITERAL = re.compile(r"\s*(\(\s*name\s*=\s*['\"].*['\"]\s*\)|name\s*=\s*['\"].*['\"])\s*")
SUPPORTED_SQL = ("java.lang.IllegalArgumentException: Supported SQL:\n"
                 "  uri content://some_table/some_property with null where and where args\n"
                 "  uri content://some_table with query name=? and single name as arg\n"
                 "  uri content://some_table with query name=some_name and null args\n"
                 "  but got - uri:{uri}, where:{where} whereArgs:null")


class SettingsProvider:
    """Answers `content` calls on the settings authority; `store` returns the live tables
    (a snapshot restore replaces them, so they are looked up on every call)."""

    AUTHORITY = AUTHORITY

    def __init__(self, store: Callable[[], dict[str, dict[str, str]]]) -> None:
        self._store = store
        self._ids: dict[tuple[str, str], int] = {}
        self._next_id: dict[str, int] = {}

    def close(self) -> None:
        """Nothing to release: the store belongs to the system."""

    def _id(self, table: str, name: str) -> int:
        key = (table, name)
        if key not in self._ids:
            self._ids[key] = self._next_id.get(table, 1)
            self._next_id[table] = self._ids[key] + 1
        return self._ids[key]

    def _table(self, uri: ContentUri) -> tuple[str, dict[str, str]]:
        tables = self._store()
        if not uri.path or uri.path[0] not in tables:
            raise ProviderError(f"java.lang.IllegalArgumentException: Invalid Uri path:{uri}")
        return uri.path[0], tables[uri.path[0]]

    def _name(self, uri: ContentUri, where: str | None, all_allowed: bool) -> str | None:
        """The one setting a call is about, or None for the whole table (queries only)."""
        if len(uri.path) == 2 and where is None:
            return uri.path[1]
        if len(uri.path) == 1:
            if where is not None and _NAME_LITERAL.fullmatch(where):
                start = max(where.find("'"), where.find('"')) + 1
                return where[start : max(where.rfind("'"), where.rfind('"'))]
            if where is None and all_allowed:
                return None
        raise ProviderError(SUPPORTED_SQL.format(uri=uri, where=where))

    def query(self, uri: ContentUri, projection: Sequence[str] | None = None,
              selection: str | None = None, sort: str | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        table_name, table = self._table(uri)
        columns = list(projection) if projection else list(COLUMNS)
        for column in columns:
            if column not in COLUMNS:
                raise ProviderError(f"java.lang.IllegalArgumentException: Invalid column: {column}")
        name = self._name(uri, selection, all_allowed=True)
        names = [name] if name is not None else list(table)
        rows = []
        for key in names:
            if key in table:
                record = {"_id": self._id(table_name, key), "name": key, "value": table[key]}
                rows.append(tuple(record[c] for c in columns))
        return columns, rows

    def insert(self, uri: ContentUri, values: dict[str, Any]) -> ContentUri | None:
        table_name, table = self._table(uri)
        name = values.get("name")
        if not name:
            return None
        table[str(name)] = "null" if values.get("value") is None else str(values["value"])
        self._id(table_name, str(name))
        return ContentUri(uri.authority, (table_name, str(name)))

    def update(self, uri: ContentUri, values: dict[str, Any], selection: str | None = None) -> int:
        table_name, table = self._table(uri)
        target = self._name(uri, selection, all_allowed=False)
        # As on Android, the values must name a setting too, though the selection picks which,
        # and an update changes only a setting that exists (insert adds one).
        if not values.get("name") or target is None or target not in table:
            return 0
        table[target] = "null" if values.get("value") is None else str(values["value"])
        self._id(table_name, target)
        return 1

    def delete(self, uri: ContentUri, selection: str | None = None) -> int:
        _, table = self._table(uri)
        target = self._name(uri, selection, all_allowed=False)
        return 1 if target is not None and table.pop(target, None) is not None else 0
