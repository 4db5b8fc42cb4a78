"""Data recipes: a YAML file saying which stored trajectories are candidates for a dataset and
how heavily each kind is drawn, read into a frozen :class:`Recipe`.

A recipe weights six dimensions of a trajectory (its task's category, difficulty and domain,
its ``source``, its ``data_source``, and ``calls``: how many tool calls it made before
``finish``, :data:`CALLS`); a trajectory's weight is the product of its buckets'
weights, a bucket not listed weighing 1.0 and a weight of 0 dropping the bucket. It caps how
many trajectories one task template gives, dedups identical call sequences of one task
instance, and draws ``size`` of them from ``seed`` (:mod:`planner_runtime.data.build`). Every
problem names the file, line and field, as task YAML does (:mod:`planner_runtime.yaml_lines`):
an unknown key, a weight that is no number or is negative, a bucket the dimension does not
have, a dimension whose every bucket weighs 0 (nothing could be drawn), a size or cap below 1.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from planner_runtime.contract import DataSource, Source
from planner_runtime.errors import TaskSpecError
from planner_runtime.tasks.spec import Category, builtin_suite
from planner_runtime.yaml_lines import line_of, message, read_yaml

DIMENSIONS = ("category", "difficulty", "source", "data_source", "domain", "calls")
DIFFICULTIES = ("easy", "medium", "hard")
# the calls buckets: tool calls an episode made before finish (a sub-agent's own calls are its own)
CALLS = ("zero", "one", "two", "three_plus")


def calls_bucket(calls: int) -> str:
    """The ``calls`` bucket of an episode that made ``calls`` tool calls besides ``finish``."""
    return CALLS[min(max(calls, 0), len(CALLS) - 1)]


class RecipeError(TaskSpecError):
    """A recipe file is invalid; names the file, line and field (like a task file's errors)."""


Weight = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Select(_Model):
    stores: tuple[str, ...] = ()  # the CLI's --store says which store; kept for the file's readers
    collections: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    split: Literal["train", "test", "all"] = "train"
    success: StrictBool = True
    since: datetime | date | None = None


class _Weights(_Model):
    category: dict[str, Weight] = Field(default_factory=dict)
    difficulty: dict[str, Weight] = Field(default_factory=dict)
    source: dict[str, Weight] = Field(default_factory=dict)
    data_source: dict[str, Weight] = Field(default_factory=dict)
    domain: dict[str, Weight] = Field(default_factory=dict)
    calls: dict[str, Weight] = Field(default_factory=dict)


class _Caps(_Model):
    per_task: StrictInt | None = Field(default=None, ge=1)


class _File(_Model):
    name: str = Field(pattern=r"^[a-z0-9._-]+$")
    select: _Select = _Select()
    weights: _Weights = _Weights()
    caps: _Caps = _Caps()
    dedup: StrictBool = True
    size: StrictInt = Field(ge=1)
    seed: StrictInt = Field(default=0, ge=0)
    allow_repeats: StrictBool = False


_KEYS = {(): _File, ("select",): _Select, ("weights",): _Weights, ("caps",): _Caps}


@dataclass(frozen=True)
class RecipeSelect:
    """Which trajectories are candidates: ``collections`` (any of them; empty: all), the task
    template's ``split`` (``all``: both), verified successes or failures, started at or after
    ``since``."""

    collections: tuple[str, ...] = ()
    split: str = "train"
    success: bool = True
    since: datetime | None = None


@dataclass(frozen=True)
class Recipe:
    """A validated recipe; ``text`` and ``sha256`` are the file as given."""

    name: str
    select: RecipeSelect
    weights: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]  # (dimension, ((bucket, weight), ...))
    per_task: int | None
    dedup: bool
    size: int
    seed: int
    allow_repeats: bool
    path: str
    text: str
    sha256: str

    def weight(self, dimension: str, bucket: str) -> float:
        """The weight of ``bucket`` of ``dimension`` (1.0 when the recipe does not list it)."""
        for dim, buckets in self.weights:
            if dim == dimension:
                return next((w for b, w in buckets if b == bucket), 1.0)
        return 1.0

    def to_json(self) -> dict[str, Any]:
        """The recipe as parsed, for a manifest (its text and digest are recorded beside it)."""
        return {
            "name": self.name,
            "select": {"collections": list(self.select.collections), "split": self.select.split, "success": self.select.success,
                       "since": self.select.since.isoformat() if self.select.since else None},
            "weights": {dim: dict(buckets) for dim, buckets in self.weights},
            "caps": {"per_task": self.per_task}, "dedup": self.dedup, "size": self.size, "seed": self.seed,
            "allow_repeats": self.allow_repeats,
        }


@functools.lru_cache(maxsize=1)
def known_buckets() -> dict[str, tuple[str, ...]]:
    """The buckets each dimension has: categories, the built-in suite's difficulties and domains,
    :class:`~planner_runtime.contract.Source` and :class:`~planner_runtime.contract.DataSource`."""
    tasks = builtin_suite().tasks
    return {
        "category": tuple(c.value for c in Category),
        "difficulty": tuple(sorted(set(DIFFICULTIES) | {t.difficulty for t in tasks})),
        "source": tuple(s.value for s in Source),
        "data_source": tuple(d.value for d in DataSource),
        "domain": tuple(sorted({t.domain for t in tasks})),
        "calls": CALLS,
    }


def _problem_text(err: Any) -> str:
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        model = _KEYS.get(loc[:-1])
        allowed = ", ".join(model.model_fields) if model is not None else ""
        return f"unknown key {loc[-1]!r}" + (f"; the keys here are: {allowed}" if allowed else "")
    if loc == ("name",) and err["type"] == "string_pattern_mismatch":
        return f"{err.get('input')!r}: a recipe's name is lowercase letters, digits, '.', '_' and '-'"
    if loc[:1] == ("weights",) and len(loc) == 4 and loc[-1] == "[key]" and loc[1] in DIMENSIONS:
        return f"a bucket is a name, not {err.get('input')!r}; the {loc[1]} buckets are: {', '.join(known_buckets()[loc[1]])}"
    if loc[:1] == ("weights",) and len(loc) == 3:
        return f"a weight is a number, 0 or more (0 drops the bucket); got {err.get('input')!r}"
    return message(err)


def recipe_problems(path: Path | str) -> tuple[Recipe | None, list[RecipeError]]:
    """The recipe in ``path`` and every problem found in it, in file order (a recipe only when none)."""
    path = Path(path)
    data, node, problems = read_yaml(path, RecipeError)
    if problems:
        return None, problems  # type: ignore[return-value]
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        found: dict[str, RecipeError] = {}
        for err in exc.errors():
            loc = tuple(err["loc"])
            if loc[-1:] == ("[key]",):  # a mapping's key, named as the file writes it
                loc = loc[:-1]
            field = ".".join(str(p) for p in loc) or "recipe"
            line = line_of(node, loc)
            found.setdefault(field, RecipeError(str(path), line, field, _problem_text(err)))
        return None, sorted(found.values(), key=lambda p: p.line or 0)
    errors = _bucket_problems(path, node, parsed.weights)
    if errors:
        return None, errors
    return _recipe(parsed, path, path.read_bytes()), []


def load_recipe(path: Path | str) -> Recipe:
    """The recipe in ``path``; :class:`RecipeError` naming the line and field of its first problem."""
    recipe, problems = recipe_problems(path)
    if problems:
        raise problems[0]
    assert recipe is not None
    return recipe


def _bucket_problems(path: Path, node: yaml.Node | None, weights: _Weights) -> list[RecipeError]:
    known = known_buckets()
    problems = []
    for dim in DIMENSIONS:
        listed: dict[str, float] = getattr(weights, dim)
        for bucket in listed:
            if bucket not in known[dim]:
                problems.append(RecipeError(str(path), line_of(node, ["weights", dim, bucket]), f"weights.{dim}.{bucket}",
                                            f"unknown {dim} {bucket!r}; the {dim} buckets are: {', '.join(known[dim])}"))
        if listed and not any(listed.get(b, 1.0) > 0 for b in known[dim]):
            problems.append(RecipeError(str(path), line_of(node, ["weights", dim]), f"weights.{dim}",
                                        f"every {dim} bucket weighs 0, so nothing could be drawn "
                                        "(a bucket not listed weighs 1.0; give one a weight above 0)"))
    return sorted(problems, key=lambda p: p.line or 0)


def _recipe(parsed: _File, path: Path, raw: bytes) -> Recipe:
    since = parsed.select.since
    if since is not None and not isinstance(since, datetime):
        since = datetime(since.year, since.month, since.day)
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return Recipe(
        name=parsed.name,
        select=RecipeSelect(collections=parsed.select.collections, split=parsed.select.split, success=parsed.select.success,
                            since=since),
        weights=tuple((dim, tuple(getattr(parsed.weights, dim).items())) for dim in DIMENSIONS if getattr(parsed.weights, dim)),
        per_task=parsed.caps.per_task, dedup=parsed.dedup, size=parsed.size, seed=parsed.seed,
        allow_repeats=parsed.allow_repeats, path=str(path), text=raw.decode("utf-8"),
        sha256=hashlib.sha256(raw).hexdigest(),
    )
