"""Which device state a task's checks read that its setup never sets: a warning for real phones.

A virtual phone is restored to its boot snapshot before every collected episode, so a check may
rely on a default there. A real phone keeps whatever the previous task or its owner left: a check
on state the setup never writes passes or fails by history, not by what the planner did. Every
device check reads one *state key*, and setup actions write keys:

- ``setting:<namespace>/<key>`` — a ``setting`` check; written by a ``settings_put`` of that key.
- ``content:<authority>`` — a ``content`` check on a table of a provider; written by a
  ``content_delete`` without a ``where`` on that table or on a URI above it (``content://sms``
  covers ``content://sms/sent``; ``content://sms/inbox`` does not). A delete with a ``where``
  leaves the other rows in place, and so does an insert. Some tables are views of one store:
  deleting ``raw_contacts`` clears ``contacts`` and ``data`` too (:data:`VIEWS`).
- ``file:<path>`` — a ``file`` check; written by a ``file_push`` to that path or a
  ``folder_empty`` of a folder above it (the check then reads what the episode left).

Answer, call and step checks read no device state. A key the task means to take as it finds it
is declared under the task's ``assumes:`` (the same key syntax), which silences the warning and
documents what a real phone must hold. These are warnings, never load errors: the suite still
loads and runs, and on virtual phones the snapshot makes it repeatable anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from urllib.parse import urlparse

from planner_runtime.tasks.declarations import CheckSpec, SetupAction
from planner_runtime.tasks.spec import TaskSpec

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


# Tables whose rows a delete on another table of the same provider also clears.
VIEWS: dict[tuple[str, str], tuple[str, ...]] = {
    ("com.android.contacts", "raw_contacts"): ("contacts", "data"),
}


def _authority(uri: str) -> str:
    return urlparse(uri).netloc


def _table(uri: str) -> tuple[str, tuple[str, ...]]:
    """The provider and the path's segments (``content://sms/sent`` → ``("sms", ("sent",))``)."""
    parsed = urlparse(uri)
    return parsed.netloc, tuple(p for p in parsed.path.split("/") if p)


def clears(delete: str, read: str) -> bool:
    """A delete of every row of URI ``delete`` resets what a check on URI ``read`` sees."""
    (d_auth, d_path), (r_auth, r_path) = _table(delete), _table(read)
    if d_auth != r_auth:
        return False
    if r_path[: len(d_path)] == d_path:
        return True
    views = VIEWS.get((d_auth, d_path[0]), ()) if len(d_path) == 1 else ()
    return bool(r_path) and r_path[0] in views


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


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
    """The setting or file key a setup action resets; None for the others (content deletes and
    folders are matched against each check by :func:`covers`)."""
    if action.settings_put is not None:
        return f"setting:{action.settings_put.namespace}/{action.settings_put.key}"
    if action.file_push is not None:
        return f"file:{action.file_push.path}"
    return None


def covers(action: SetupAction, check: CheckSpec) -> bool:
    """``action`` resets the state ``check`` reads."""
    if check.content is not None:
        d = action.content_delete
        return d is not None and d.where is None and clears(d.uri, check.content.uri)
    if check.file is not None and action.folder_empty is not None:
        return _below(check.file.path, action.folder_empty.path)
    key = read_key(check)
    return key is not None and key == written_key(action)


def unset_reads(task: TaskSpec) -> list[Unset]:
    """The checks of ``task`` that read a key neither its setup writes nor it assumes."""
    found = []
    for n, check in enumerate(task.checks, start=1):
        key = read_key(check)
        if key is not None and key not in task.assumes and not any(covers(a, check) for a in task.setup):
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
