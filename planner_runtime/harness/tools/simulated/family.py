"""Simulated tool families, declared in YAML files: the long tail of services a phone assistant
meets (weather, flights, banking, smart home ...) where a programmable sandbox app would cost
too much.

A family file declares its part of the episode's world state — ``collections`` of rows, each
with a key and typed fields, and the rows every episode starts from — and its tools: typed
``params`` (the JSON schema the planner sees), ``steps`` that read and write the world
(:mod:`.world` runs them) and the ``returns`` they answer with. Every template names what it
reads: ``{param}``, or ``{alias.field}`` of an earlier step's row; loading checks that each one
exists, that every row matches its collection's fields and that names are unique, and names the
file, line and field of every problem (:class:`~planner_runtime.errors.TaskSpecError`).
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner_runtime.errors import TaskSpecError
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.yaml_lines import read_yaml, validation_problems

FAMILIES_DIR = Path(__file__).parent / "families"
# The functional domains of the whole tool catalogue (phone apps and simulated families alike).
DOMAINS = ("communication", "productivity", "system", "navigation", "travel", "finance", "shopping", "food",
           "media", "smart_home", "health", "information", "events")
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\}")
OPERATORS = ("~", "<=", ">=", "!=")  # a match key's suffix: contains, at most, at least, not equal
NAME = r"^[a-z][a-z0-9_]*$"


class Problem(ValueError):
    """A field a check across fields found wrong; ``loc`` is its path in the family."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        self.loc, self.message = loc, message
        super().__init__(f"{'.'.join(str(p) for p in loc)}: {message}")


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Kind(StrEnum):
    string = "string"
    integer = "integer"
    number = "number"
    boolean = "boolean"


_PY = {Kind.string: (str,), Kind.integer: (int,), Kind.number: (int, float), Kind.boolean: (bool,)}


def fits(kind: Kind, value: Any) -> bool:
    """``value`` is of ``kind`` as JSON has it (a bool is no number)."""
    return isinstance(value, _PY[kind]) and not (kind is not Kind.boolean and isinstance(value, bool))


class FieldDecl(Model):
    type: Kind
    description: str = ""
    optional: bool = False  # a row may leave it out (it reads as null)


class Collection(Model):
    """Rows of one kind in the world state; ``key`` names the field that tells them apart."""

    key: str
    fields: dict[str, FieldDecl] = Field(min_length=1)
    rows: tuple[dict[str, Any], ...] = ()
    id_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9\-]*$")  # keys made for added rows: PREFIX + number

    @model_validator(mode="after")
    def _rows_fit(self) -> Collection:
        if self.key not in self.fields:
            raise Problem(("key",), f"the key {self.key!r} is not one of the fields ({', '.join(self.fields)})")
        seen: set[Any] = set()
        for i, row in enumerate(self.rows):
            problem = row_problem(self, row)
            if problem is not None:
                raise Problem(("rows", i, problem[0]), problem[1])
            if row[self.key] in seen:
                raise Problem(("rows", i, self.key), f"two rows have the key {row[self.key]!r}")
            seen.add(row[self.key])
        return self


def row_problem(collection: Collection, row: dict[str, Any]) -> tuple[str, str] | None:
    """(field, why) of the first way ``row`` does not match ``collection``'s fields, or None."""
    for name in row:
        if name not in collection.fields:
            return name, f"no field {name!r} in this collection (fields: {', '.join(collection.fields)})"
    for name, decl in collection.fields.items():
        value = row.get(name)
        if value is None:
            if not decl.optional:
                return name, f"{name} is required ({decl.type.value})"
        elif not fits(decl.type, value):
            return name, f"{name} must be {decl.type.value}, got {type(value).__name__} {value!r}"
    return None


class Param(Model):
    type: Kind
    description: str = Field(min_length=1)
    enum: tuple[str | int | float, ...] | None = None
    default: Any = None  # present (even null) makes the parameter optional
    minimum: float | None = None
    maximum: float | None = None

    @property
    def required(self) -> bool:
        return "default" not in self.model_fields_set


class Step(Model):
    """One read or write of the world; exactly one of the verbs, on a ``collection`` of this family.

    ``get`` one row matching ``match`` (none: the planner's mistake, answered with the keys there
    are); ``find`` rows (a list, ``limit`` at most, ``fields`` of each, sorted by ``sort``);
    ``add`` a row of ``values`` (its key made when not given); ``update`` the matched row's
    ``values``; ``remove`` it; ``adjust`` its number ``field`` by ``by``, refused past
    ``min``/``max``. A get, update, remove or adjust goes on only when each ``require`` holds on
    the matched row. ``as`` names the row(s) for later templates; ``refuse``
    is the hint when a ``require`` or a bound stops it."""

    verb: Literal["get", "find", "add", "update", "remove", "adjust"]
    collection: str
    match: dict[str, Any] = Field(default_factory=dict)
    values: dict[str, Any] = Field(default_factory=dict)
    require: dict[str, Any] = Field(default_factory=dict)
    field: str | None = None
    by: str | float | None = None
    min: float | None = None
    max: float | None = None
    limit: int = Field(default=10, ge=1, le=50)
    fields: tuple[str, ...] | None = None
    sort: str | None = None  # a field; "-field" sorts descending
    alias: str = Field(default="", alias="as", pattern=r"^([a-z_]\w*)?$")
    refuse: str | None = None

    @property
    def name(self) -> str:
        return self.alias or ("items" if self.verb == "find" else "item")


class ToolDecl(Model):
    name: str = Field(pattern=NAME, max_length=48)
    description: str = Field(min_length=8, max_length=300)
    params: dict[str, Param] = Field(default_factory=dict)
    steps: tuple[Step, ...] = Field(min_length=1)
    returns: dict[str, Any] = Field(min_length=1)
    sensitive: Sensitivity | None = None


class Family(Model):
    family: str = Field(pattern=NAME)
    title: str = Field(min_length=1)  # what the service is called, e.g. "Weather"
    domain: Literal[DOMAINS]  # type: ignore[valid-type]
    description: str = ""
    aliases: tuple[str, ...] = ()  # names a goal may use for it
    topics: str = ""  # words of the goals it serves, for choosing its tools
    collections: dict[str, Collection] = Field(min_length=1)
    tools: tuple[ToolDecl, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self) -> Family:
        names = [t.name for t in self.tools]
        for i, tool in enumerate(self.tools):
            if names.index(tool.name) != i:
                raise Problem(("tools", i, "name"), f"two tools are named {tool.name!r}")
            check_tool(self, tool, ("tools", i))
        return self


def _templates(value: Any, loc: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str, str | None]]:
    """(location, name, field) of every placeholder in ``value`` (strings, lists, mappings)."""
    if isinstance(value, str):
        for m in PLACEHOLDER.finditer(value):
            yield loc, m.group(1), m.group(2)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _templates(v, loc + (k,))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            yield from _templates(v, loc + (n,))


def split_key(key: str) -> tuple[str, str]:
    """A match key as (field, operator): ``"price<="`` → ("price", "<=")."""
    for op in OPERATORS:
        if key.endswith(op):
            return key[: -len(op)], op
    return key, "="


def check_tool(family: Family, tool: ToolDecl, at: tuple[str | int, ...]) -> None:
    """Raise :class:`Problem` at the first name in ``tool`` that refers to nothing."""
    known: dict[str, tuple[str, bool]] = {}  # alias → (collection, is a list)
    for n, step in enumerate(tool.steps):
        here = at + ("steps", n)
        coll = family.collections.get(step.collection)
        if coll is None:
            raise Problem(here + ("collection",), f"no collection {step.collection!r} in family {family.family} ({', '.join(family.collections)})")
        for part in ("match", "values", "require"):
            for key in getattr(step, part):
                name = split_key(key)[0] if part == "match" else key
                if name not in coll.fields:
                    raise Problem(here + (part, key), f"no field {name!r} in {step.collection} ({', '.join(coll.fields)})")
        for name in (step.field, (step.sort or "").lstrip("-") or None, *(step.fields or ())):
            if name is not None and name not in coll.fields:
                raise Problem(here, f"no field {name!r} in {step.collection} ({', '.join(coll.fields)})")
        if step.verb == "adjust" and (step.field is None or step.by is None or coll.fields[step.field].type not in (Kind.integer, Kind.number)):
            raise Problem(here + ("field",), "adjust needs a number field and by")
        if step.verb in ("get", "update", "remove", "adjust") and not step.match:
            raise Problem(here + ("match",), f"{step.verb} needs a match naming the row")
        if step.verb in ("find", "add") and (step.require or step.refuse):
            raise Problem(here + ("require" if step.require else "refuse",),
                          f"{step.verb} takes no require or refuse (they guard the one row a get, update, remove or adjust matched)")
        if step.verb in ("update", "add") and not step.values:
            raise Problem(here + ("values",), f"{step.verb} needs values")
        for loc, name, field in _templates(step.model_dump(by_alias=True, include={"match", "values", "require", "by"}), here):
            _check_ref(family, tool, known, loc, name, field)
        # a refusal speaks of the row it refuses: there {item.field} is that row's
        for loc, name, field in _templates(step.model_dump(by_alias=True, include={"refuse"}), here):
            _check_ref(family, tool, {**known, "item": (step.collection, False)}, loc, name, field)
        if step.verb == "add":
            missing = [f for f, d in coll.fields.items() if not d.optional and f not in step.values and f != coll.key]
            if missing:
                raise Problem(here + ("values",), f"add leaves required field(s) {', '.join(missing)} of {step.collection} empty")
        known[step.name] = (step.collection, step.verb == "find")
    for loc, name, field in _templates(tool.returns, at + ("returns",)):
        _check_ref(family, tool, known, loc, name, field)


def _check_ref(family: Family, tool: ToolDecl, known: dict[str, tuple[str, bool]], loc: tuple[str | int, ...], name: str, field: str | None) -> None:
    if field is None:
        if name in tool.params or (name in known and known[name][1]):
            return
        raise Problem(loc, f"{{{name}}} names no parameter of {tool.name} ({', '.join(tool.params) or 'none'}) and no earlier find")
    if name not in known:
        raise Problem(loc, f"{{{name}.{field}}}: no earlier step is named {name!r} ({', '.join(known) or 'none yet'})")
    coll, many = known[name]
    if many:
        raise Problem(loc, f"{{{name}.{field}}}: {name} is a list of rows (write {{{name}}})")
    if field not in family.collections[coll].fields:
        raise Problem(loc, f"{{{name}.{field}}}: no field {field!r} in {coll} ({', '.join(family.collections[coll].fields)})")


def family_problems(path: Path) -> tuple[Family | None, list[TaskSpecError]]:
    """The family in ``path`` and every problem found in it (none: it loads)."""
    data, node, problems = read_yaml(path)
    if problems:
        return None, problems
    try:
        return Family.model_validate(data), []
    except ValidationError as exc:
        return None, validation_problems(path, node, exc, root="family")


def load_family(path: Path | str) -> Family:
    family, problems = family_problems(Path(path))
    if problems:
        raise problems[0]
    assert family is not None
    return family
