"""The world state simulated tools act on: one JSON document per episode, reset from the rows
the families declare, seeded by the task, read back by its ``world`` checks.

Collections are named ``family.collection``. :meth:`World.run` executes one tool's steps: each
template is filled from the call's arguments and the rows earlier steps named, every value is
checked against its field's type before it is written, and a step that cannot be done — no
such row, a ``require`` that does not hold, a balance that would go below its ``min`` — is the
planner's mistake, a :class:`~planner_runtime.harness.tools.ToolFailure` with a hint (see
:func:`missing`), and leaves the world as it was (a tool's writes land together or not at all).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from planner_runtime.contract import ErrorCode
from planner_runtime.harness.tools.errors import ToolFailure
from planner_runtime.harness.tools.simulated.family import OPERATORS, PLACEHOLDER, Collection, Family, Kind, Step, ToolDecl, row_problem, split_key

_SHOWN_KEYS = 8  # keys a "no such row" hint names
_CODE = re.compile(r"[^a-z]*[0-9][^a-z]*")  # BK-301, 1Z84F2A0391, SUB-7: a digit and no lowercase letter


def lister(family: Family, collection: str, besides: str) -> str | None:
    """The tool of ``family`` (other than ``besides``) that lists ``collection``'s rows: of those
    with a ``find`` step on it, the one needing the fewest arguments, then matching on the fewest
    fields (``home_devices`` lists every device, ``home_camera_status`` only the cameras), then
    the first declared."""
    found = []
    for n, tool in enumerate(family.tools):
        filters = [len(s.match) for s in tool.steps if s.verb == "find" and s.collection == collection]
        if filters and tool.name != besides:
            found.append((sum(p.required for p in tool.params.values()), min(filters), n, tool.name))
    return min(found)[3] if found else None


def missing(collection: str, wanted: str, keys: list[str], listed: str | None, salt: str) -> str:
    """The hint for a row ``wanted`` that ``collection`` lacks: the keys there are, and ``listed``,
    the tool that lists them with their details. Codes (``BK-301``) tell nothing about which row
    is meant, so where a tool lists them the hint names only that tool. Otherwise the keys come
    in an order set by their hash (``salt`` the collection), never the order they were seeded in:
    a task seeds the row it wants first, and "the first key listed" would be a right guess no
    planner earned."""
    head = f"no {collection} with {wanted}"
    if not keys:
        return f"{head}; {collection} is empty"
    if listed and all(_CODE.fullmatch(k) for k in keys):
        return f"{head}; {listed} lists them with their details"
    keys = sorted(keys, key=lambda k: hashlib.sha256(f"{salt}\n{k}".encode()).digest())
    there = keys[:_SHOWN_KEYS] + ([f"{len(keys) - _SHOWN_KEYS} more"] if len(keys) > _SHOWN_KEYS else [])
    return f"{head}; there are: {', '.join(there)}" + (f"; {listed} lists them" if listed else "")


class WorldError(ValueError):
    """Rows a task or file gives that do not match their collection: the task's fault."""


def fill(value: Any, names: Mapping[str, Any]) -> Any:
    """``value`` with placeholders filled: ``"{x}"`` alone keeps ``x``'s type, ``{a.f}`` reads
    field ``f`` of row ``a``; other strings are rendered as text (null as empty)."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return _lookup(names, whole.group(1), whole.group(2))
        return PLACEHOLDER.sub(lambda m: _text(_lookup(names, m.group(1), m.group(2))), value)
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    return value


def _lookup(names: Mapping[str, Any], name: str, field_name: str | None) -> Any:
    value = names.get(name)
    return value.get(field_name) if field_name is not None and isinstance(value, dict) else value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def coerce(kind: Kind, value: Any) -> Any:
    """``value`` as a field of ``kind`` holds it ("12.5" → 12.5); ValueError when it is not one."""
    if value is None:
        return None
    if kind is Kind.string:
        return value if isinstance(value, str) else _text(value)
    if kind is Kind.boolean:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
        raise ValueError(f"{value!r} is not true/false")
    number = float(value) if not isinstance(value, bool) else None
    if number is None:
        raise ValueError(f"{value!r} is not a number")
    if kind is Kind.integer:
        if not number.is_integer():
            raise ValueError(f"{value!r} is not a whole number")
        return int(number)
    return round(number, 6)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.casefold().split()) == " ".join(b.casefold().split())
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return abs(a - b) < 1e-6
    return a == b


def matches(row: Mapping[str, Any], match: Mapping[str, Any]) -> bool:
    """``row`` meets every condition of ``match`` (strings compared without case; a null or
    empty wanted value is no condition, so an optional parameter left out filters nothing)."""
    for key, wanted in match.items():
        if wanted is None or wanted == "":
            continue
        name, op = split_key(key)
        have = row.get(name)
        if op == "~":
            if not (isinstance(have, str) and " ".join(str(wanted).casefold().split()) in " ".join(have.casefold().split())):
                return False
        elif op in ("<=", ">="):
            try:
                a, b = float(have), float(wanted)
            except (TypeError, ValueError):
                return False
            if (a > b) if op == "<=" else (a < b):
                return False
        else:
            equal = _same(have, _num(wanted) if isinstance(have, (int, float)) else wanted)
            if equal == (op == "!="):
                return False
    return True


def _num(value: Any) -> Any:
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


@dataclass
class World:
    """One episode's world: the rows of every family's collections, by ``family.collection``."""

    families: Mapping[str, Family]
    state: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    simulator: Any = None  # None: the declared ``returns`` answer; else an LLM writes them (.llm)
    flags: list[str] = field(default_factory=list)  # what the simulator's responses got wrong, for the verdict
    _made: int = 0  # keys made for added rows so far

    @classmethod
    def fresh(cls, families: Mapping[str, Family]) -> World:
        """The world every episode starts from: each collection's declared rows."""
        state = {f"{f.family}.{name}": [dict(r) for r in c.rows] for f in families.values() for name, c in f.collections.items()}
        return cls(families=families, state=state)

    def collection(self, name: str) -> Collection:
        family, _, coll = name.partition(".")
        try:
            return self.families[family].collections[coll]
        except KeyError:
            raise WorldError(f"no simulated collection {name!r}") from None

    def rows(self, name: str) -> list[dict[str, Any]]:
        self.collection(name)
        return self.state[name]

    def seed(self, name: str, rows: Iterable[Mapping[str, Any]], *, replace: bool = False) -> None:
        """Write ``rows`` into collection ``name``: all of it (``replace``) or row by row, a row
        whose key is there taking its place. Values are coerced to their fields' types; a row
        that still does not fit raises :class:`WorldError`."""
        coll = self.collection(name)
        typed = []
        for n, row in enumerate(rows):
            try:
                fixed = {k: coerce(coll.fields[k].type, v) if k in coll.fields else v for k, v in row.items()}
            except ValueError as exc:
                raise WorldError(f"{name} row {n}: {exc}") from None
            problem = row_problem(coll, fixed)
            if problem is not None:
                raise WorldError(f"{name} row {n}: {problem[1]}")
            typed.append(fixed)
        current = [] if replace else self.state[name]
        for row in typed:
            current = [r for r in current if not _same(r[coll.key], row[coll.key])] + [row]
        self.state[name] = current

    def select(self, name: str, match: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [r for r in self.rows(name) if matches(r, match)]

    def dump(self) -> str:
        return json.dumps(self.state, sort_keys=True)

    def run(self, family: Family, tool: ToolDecl, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``tool``'s steps for ``args`` and answer its ``returns``; all its writes or none."""
        saved, made = copy.deepcopy(self.state), self._made
        names: dict[str, Any] = dict(args)
        try:
            for step in tool.steps:
                names[step.name] = self._step(family, tool, step, names)
            return fill(tool.returns, names)
        except BaseException:
            self.state, self._made = saved, made
            raise

    def _step(self, family: Family, tool: ToolDecl, step: Step, names: dict[str, Any]) -> Any:
        name = f"{family.family}.{step.collection}"
        coll = family.collections[step.collection]
        match = fill(step.match, names)
        if step.verb == "add":
            values = self._typed(coll, fill(step.values, names))
            if values.get(coll.key) is None:
                self._made += 1
                values[coll.key] = coerce(coll.fields[coll.key].type, f"{coll.id_prefix}{1000 + len(self.state[name]) + self._made}")
            elif any(_same(r[coll.key], values[coll.key]) for r in self.state[name]):
                raise ToolFailure(ErrorCode.action_failed, f"{step.collection} already has {values[coll.key]!r}")
            self.state[name].append(values)
            return dict(values)
        rows = self.select(name, match)
        if step.verb == "find":
            if step.sort:
                key = step.sort.lstrip("-")
                rows = sorted(rows, key=lambda r: (r.get(key) is None, r.get(key) if r.get(key) is not None else 0), reverse=step.sort.startswith("-"))
            return [{k: r.get(k) for k in (step.fields or r)} for r in rows[: step.limit]]
        if not rows:
            wanted = ", ".join(f"{k}{'' if k.endswith(OPERATORS) else '='}{v!r}" for k, v in match.items() if v not in (None, ""))
            raise ToolFailure(ErrorCode.action_failed, missing(step.collection, wanted, [str(r[coll.key]) for r in self.state[name]],
                                                               lister(family, step.collection, tool.name), name))
        row = rows[0]
        for key, wanted in fill(step.require, names).items():
            if not _same(row.get(key), wanted):
                raise ToolFailure(ErrorCode.action_failed, fill(step.refuse, {**names, "item": row}) if step.refuse else
                                  f"{step.collection} {row[coll.key]!r} has {key}={row.get(key)!r}, not {wanted!r}")
        if step.verb == "get":
            return dict(row)
        if step.verb == "remove":
            self.state[name] = [r for r in self.state[name] if r is not row]
            return dict(row)
        if step.verb == "update":
            row.update(self._typed(coll, fill(step.values, names)))
            return dict(row)
        assert step.field is not None  # adjust (the family checked it has field and by)
        try:
            by = float(fill(step.by, names))
        except (TypeError, ValueError):
            raise ToolFailure(ErrorCode.invalid_arguments, f"{step.by!r} is not an amount") from None
        new = (row.get(step.field) or 0) + by
        if (step.min is not None and new < step.min - 1e-9) or (step.max is not None and new > step.max + 1e-9):
            raise ToolFailure(ErrorCode.action_failed, fill(step.refuse, {**names, "item": row}) if step.refuse else
                              f"{step.collection} {row[coll.key]!r}: {step.field} would be {new:g}, outside {step.min}..{step.max}")
        row[step.field] = coerce(coll.fields[step.field].type, round(new, 6))
        return dict(row)

    @staticmethod
    def _typed(coll: Collection, values: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return {k: coerce(coll.fields[k].type, v) for k, v in values.items()}
        except ValueError as exc:
            raise ToolFailure(ErrorCode.invalid_arguments, str(exc)) from None
