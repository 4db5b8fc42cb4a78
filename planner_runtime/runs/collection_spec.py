"""What a collection was started with, kept in its store so ``collect --resume ID`` runs the same
work: the suite, the task selection, the repeats, the planner, its script or model, the step
limit, the sampling temperature, the safety policy and the LLM simulator of the services.

A resumed collection takes every recorded choice. An option given again must say the same, or
the resume is refused: two planners or two policies in one collection would make its counts mean
nothing. The one exception is ``--repeat``, which may grow: that adds the new repeats' items.

The ``--suite`` and ``--script`` files are kept by content, as the policy is: editing or deleting
them between a stop and the resume changes nothing, and naming a file again whose content has
changed is refused. A collection recorded before contents were kept reads its files again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.safety import Policy


class SpecMismatch(PlannerRuntimeError):
    """An option given with ``--resume`` contradicts what the collection was started with."""


class SpecFileError(PlannerRuntimeError):
    """A ``--suite`` or ``--script`` file cannot be read."""


class CollectionSpec(BaseModel):
    """The options that decide a collection's work and results (not how many devices run it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str | None = None  # a suite file, absolute; None: the built-in suite
    suite_text: str | None = None  # its content when the collection started (None: recorded by an older release)
    tasks: tuple[str, ...] = ()  # the --task ids, sorted; empty: every task of the suite (and split)
    split: str | None = None
    repeat: int = 1
    distinct: bool = False  # with repeat: a task without random parameters runs once
    per_template: int | None = Field(default=None, ge=1)  # only the first N tasks of each template
    planner: str
    detours: bool = False  # --planner demo: each demo opens with a refused wrong guess (tasks/detours.py)
    model: str | None = None
    script: str | None = None  # --planner scripted: the scripts file, absolute
    script_text: str | None = None  # its content when the collection started (None: as for suite_text)
    policy: Policy = Policy()
    max_steps: int | None = None
    temperature: float = 0.0  # above 0: each repeat samples the planner with its own seeds
    first_seed: int = Field(default=0, ge=0)  # repeat k of a random template runs its seed first_seed + k
    simulator: str | None = None  # an OpenAI-compatible server writing simulated services' responses

    @classmethod
    def from_options(cls, *, suite: Path | None, tasks: list[str] | None, script: Path | None, **options: Any) -> CollectionSpec:
        """A new collection's spec from its command-line options (``None``: not given)."""
        given = {name: value for name, value in options.items() if value is not None}
        return cls(suite=_absolute(suite), suite_text=_content(suite, "suite"), tasks=tuple(sorted(set(tasks or ()))),
                   script=_absolute(script), script_text=_content(script, "script"), **given)

    def resumed_with(self, *, suite: Path | None, tasks: list[str] | None, script: Path | None, **options: Any) -> CollectionSpec:
        """This spec, checked against the options given again on resume (``None``: not given)."""
        given: dict[str, Any] = {"suite": _absolute(suite), "tasks": tuple(sorted(set(tasks))) if tasks else None,
                                 "script": _absolute(script), **options}
        for flag, path, kept in (("suite", suite, self.suite_text), ("script", script, self.script_text)):
            if path is not None and kept is not None and _absolute(path) == getattr(self, flag) and _content(path, flag) != kept:
                raise SpecMismatch(
                    f"--{flag} {path} has changed since this collection was started; resume without --{flag} "
                    "to use the content it was started with, or start a new collection"
                )
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


_FLAGS = {"tasks": "task", "max_steps": "max-steps", "first_seed": "first-seed", "per_template": "per-template"}


def _absolute(path: Path | None) -> str | None:
    return str(path.expanduser().resolve()) if path is not None else None


def _content(path: Path | None, flag: str) -> str | None:
    """The text of a ``--suite``/``--script`` file, kept so a resume does not depend on the file."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecFileError(f"--{flag} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SpecFileError(f"--{flag} {path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at {exc.start})") from exc


def _shown(value: Any) -> str:
    if isinstance(value, Policy):
        allowed = sorted(str(c) for c in value.allow) + sorted(value.allow_tools)
        return "a policy allowing " + (", ".join(allowed) or "nothing")
    if isinstance(value, tuple):
        return ", ".join(value) or "every task"
    return repr(value)
