"""Which device state a task's checks read that its setup never sets: a warning for real phones.

A virtual phone is restored to its boot snapshot before every collected episode, so a check may
rely on a default there. A real phone keeps whatever the previous task or its owner left: a check
on state the setup never writes passes or fails by history, not by what the planner did. Every
device check reads one *state key*, and setup actions write keys:

- ``setting:<namespace>/<key>`` — a ``setting`` check; written by a ``settings_put`` of that key.
- ``content:<authority>`` — a ``content`` check on any table of a provider; written by a
  ``content_delete`` on that provider (its tables are views of one store: deleting
  ``raw_contacts`` clears ``contacts`` and ``data``). An insert alone leaves earlier rows in place.
- ``file:<path>`` — a ``file`` check; written by a ``file_push`` to that path.

Answer, call and step checks read no device state. A key the task means to take as it finds it
is declared under the task's ``assumes:`` (the same key syntax), which silences the warning and
documents what a real phone must hold. These are warnings, never load errors: the suite still
loads and runs, and on virtual phones the snapshot makes it repeatable anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from urllib.parse import urlparse

from planner_runtime.tasks.spec import CheckSpec, SetupAction, TaskSpec

@dataclass(frozen=True)
class Unset:
    """One check that reads state the task's setup never sets."""

    task_id: str
    check: str  # the check's name, else "#<n>" (1-based)
    key: str

    def message(self) -> str:
        return (f"task {self.task_id}: check {self.check!r} reads {self.key}, which its setup never sets; a real phone keeps "
                f"what earlier runs left there: set it in setup, or declare it under assumes: [{self.key}]")

    def to_json(self) -> dict[str, str]:
        return {"task": self.task_id, "check": self.check, "key": self.key}


def _authority(uri: str) -> str:
    return urlparse(uri).netloc


def read_key(check: CheckSpec) -> str | None:
    """The state key ``check`` reads on the device; None for checks on the answer or the calls."""
    if check.setting is not None:
        return f"setting:{check.setting.namespace}/{check.setting.key}"
    if check.content is not None:
        return f"content:{_authority(check.content.uri)}"
    if check.file is not None:
        return f"file:{check.file.path}"
    return None


def written_key(action: SetupAction) -> str | None:
    """The state key a setup action resets; None for memory seeds and content inserts."""
    if action.settings_put is not None:
        return f"setting:{action.settings_put.namespace}/{action.settings_put.key}"
    if action.content_delete is not None:
        return f"content:{_authority(action.content_delete.uri)}"
    if action.file_push is not None:
        return f"file:{action.file_push.path}"
    return None


def unset_reads(task: TaskSpec) -> list[Unset]:
    """The checks of ``task`` that read a key neither its setup writes nor it assumes."""
    covered = {k for k in map(written_key, task.setup) if k is not None} | set(task.assumes)
    found = []
    for n, check in enumerate(task.checks, start=1):
        key = read_key(check)
        if key is not None and key not in covered:
            found.append(Unset(task.id, check.name or f"#{n}", key))
    return found


def suite_unset_reads(tasks: Iterable[TaskSpec]) -> list[Unset]:
    """Every task's unset reads, once per template (variants share their setup and checks)."""
    seen: set[tuple[str, str, str]] = set()
    found = []
    for task in tasks:
        for unset in unset_reads(task):
            if (task.template, unset.check, unset.key) not in seen:
                seen.add((task.template, unset.check, unset.key))
                found.append(unset)
    return found
