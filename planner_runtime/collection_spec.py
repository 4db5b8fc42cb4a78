"""What a collection was started with, kept in its store so ``collect --resume ID`` runs the same
work: the suite, the task selection, the repeats, the planner, its script or model, the step
limit and the safety policy.

A resumed collection takes every recorded choice. An option given again must say the same, or
the resume is refused: two planners or two policies in one collection would make its counts mean
nothing. The one exception is ``--repeat``, which may grow: that adds the new repeats' items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.safety import Policy


class SpecMismatch(PlannerRuntimeError):
    """An option given with ``--resume`` contradicts what the collection was started with."""


class CollectionSpec(BaseModel):
    """The options that decide a collection's work and results (not how many devices run it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str | None = None  # a suite file, absolute; None: the built-in suite
    tasks: tuple[str, ...] = ()  # the --task ids, sorted; empty: every task of the suite (and split)
    split: str | None = None
    repeat: int = 1
    planner: str
    model: str | None = None
    script: str | None = None  # --planner scripted: the scripts file, absolute
    policy: Policy = Policy()
    max_steps: int | None = None

    @classmethod
    def from_options(cls, *, suite: Path | None, tasks: list[str] | None, script: Path | None, **options: Any) -> CollectionSpec:
        """A new collection's spec from its command-line options (``None``: not given)."""
        given = {name: value for name, value in options.items() if value is not None}
        return cls(suite=_absolute(suite), tasks=tuple(sorted(set(tasks or ()))), script=_absolute(script), **given)

    def resumed_with(self, *, suite: Path | None, tasks: list[str] | None, script: Path | None, **options: Any) -> CollectionSpec:
        """This spec, checked against the options given again on resume (``None``: not given)."""
        given: dict[str, Any] = {"suite": _absolute(suite), "tasks": tuple(sorted(set(tasks))) if tasks else None,
                                 "script": _absolute(script), **options}
        grown: dict[str, Any] = {}
        for name, value in given.items():
            if value is None:
                continue
            recorded = getattr(self, name)
            if name == "repeat" and value >= recorded:
                grown[name] = value
            elif value != recorded:
                raise SpecMismatch(
                    f"--{_FLAGS.get(name, name)} {_shown(value)} differs from what this collection was started with "
                    f"({_shown(recorded)}); resume without it to use the recorded value, or start a new collection"
                )
        return self.model_copy(update=grown)


_FLAGS = {"tasks": "task", "max_steps": "max-steps"}


def _absolute(path: Path | None) -> str | None:
    return str(path.expanduser().resolve()) if path is not None else None


def _shown(value: Any) -> str:
    if isinstance(value, Policy):
        allowed = sorted(str(c) for c in value.allow) + sorted(value.allow_tools)
        return "a policy allowing " + (", ".join(allowed) or "nothing")
    if isinstance(value, tuple):
        return ", ".join(value) or "every task"
    return repr(value)
