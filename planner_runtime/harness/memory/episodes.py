"""Memory in episodes: a user's profile file, what goes into the planner's context, reminders
from intents whose trigger matched, the episodic summary written when an episode ends, and
JSONL export/import.

The store itself (SQLite, FTS5, embeddings) is :mod:`planner_runtime.harness.memory.rows`;
this module decides what an episode sees: at its start, the memories most relevant to the goal
(above a score, within a character budget) and a "Reminder: ..." line for every intent that is
due — a time that has passed, or an app the goal names — each shown once.

What an episode writes to a profile: the memories the planner keeps with ``remember`` (the
user's goal asked it to: "remember that I wake at 6:45"), always; and, at its end, one episodic
summary only when the episode is worth recalling as the user's own — it finished, its verdict
(if any) passed, and a model planned it. A failed, truncated, interrupted or infra-stopped
episode and a scripted planner's replay leave no summary (:func:`should_record`), so trying
things out never fills a profile with episodes nobody asked for.

What a task writes to a profile: nothing. A task that seeds memories ("I keep my screen
brightness at 30%") runs on a :func:`scratch_store` whatever profile was asked for, so its
made-up memories never enter a real one, and the profile is not read either: the task's checks
must not depend on what a user happens to have stored. A task without memory seeds may use a
profile like any goal.
"""

from __future__ import annotations

import json
import re
import tempfile
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator, Literal

from pydantic import ValidationError

from planner_runtime.contract import Trajectory, TrajectoryStatus, utcnow
from planner_runtime.errors import ConfigError, StoreError
from planner_runtime.harness.apps import APPS, find_app
from planner_runtime.harness.memory.embeddings import Embedder
from planner_runtime.harness.memory.records import Hit, Memory, MemoryKind, Trigger, TriggerKind, parse_time
from planner_runtime.harness.memory.search import MemoryStore

__all__ = ["Hit", "Memory", "MemoryKind", "MemoryStore", "Trigger", "TriggerKind"]

DEFAULT_PROFILE = "default"
SECTION_TITLE = "# What you know about the user"
CONTEXT_KINDS = (MemoryKind.preference, MemoryKind.fact, MemoryKind.episodic)
MIN_CONTEXT_SCORE = 0.2  # below this a memory is noise for the goal, not context
_PROFILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_KIND_LABEL = {MemoryKind.preference: "preference", MemoryKind.fact: "fact", MemoryKind.episodic: "past episode"}


def profile_path(home: Path, profile: str = DEFAULT_PROFILE) -> Path:
    """``<home>/profiles/<profile>/memory.sqlite``."""
    if not _PROFILE.match(profile):
        raise ConfigError(f"bad profile name {profile!r}: letters, digits, '.', '_' and '-' only")
    return home / "profiles" / profile / "memory.sqlite"


@contextmanager
def scratch_store(*, embedder: Embedder | None | Literal["auto"] = "auto") -> Iterator[MemoryStore]:
    """An open, empty store in a temporary folder, deleted afterwards (for task runs)."""
    with tempfile.TemporaryDirectory(prefix="planner-memory-") as folder:
        with MemoryStore(Path(folder) / "memory.sqlite", embedder=embedder) as store:
            yield store


def profile_store(home: Path, profile: str = DEFAULT_PROFILE, *, embedder: Embedder | None | Literal["auto"] = "auto") -> MemoryStore:
    """The (unopened) store of a profile."""
    return MemoryStore(profile_path(home, profile), embedder=embedder)


# -- intents ------------------------------------------------------------------------------------
def apps_in_goal(goal: str) -> set[str]:
    """Catalogue apps a goal names (by name or alias: "alarm" → Clock)."""
    text = f" {' '.join(re.findall(r'[a-z0-9.]+', goal.lower()))} "
    return {app.name for app in APPS if any(f" {word} " in text for word in (app.name.lower(), *app.aliases, *app.packages))}


def _app_matches(value: str, goal: str, apps: set[str]) -> bool:
    app = find_app(value)
    if app is not None:
        return app.name in apps
    words = " ".join(re.findall(r"[a-z0-9.]+", value.lower()))
    return bool(words) and f" {words} " in f" {' '.join(re.findall(r'[a-z0-9.]+', goal.lower()))} "


def due_intents(
    store: MemoryStore,
    *,
    now: datetime | None = None,
    goal: str = "",
    apps: Iterable[str] = (),
    places: Iterable[str] = (),
    events: Iterable[str] = (),
) -> list[Memory]:
    """Intents not yet fired nor expired whose trigger matches: a time that has passed, an app
    among ``apps`` or named in ``goal``, one of ``places`` or ``events``. Oldest first."""
    now = now or utcnow()
    open_apps = set(apps) | apps_in_goal(goal)
    places_l, events_l = {p.strip().lower() for p in places}, {e.strip().lower() for e in events}
    due = []
    for memory in reversed(store.intents()):
        trigger = memory.trigger
        if memory.fired_at is not None or memory.expired(now) or trigger is None:
            continue
        if (
            (trigger.kind is TriggerKind.time and parse_time(trigger.value) <= now)
            or (trigger.kind is TriggerKind.app and _app_matches(trigger.value, goal, open_apps))
            or (trigger.kind is TriggerKind.place and trigger.value.strip().lower() in places_l)
            or (trigger.kind is TriggerKind.event and trigger.value.strip().lower() in events_l)
        ):
            due.append(memory)
    return due


def _why(trigger: Trigger) -> str:
    return {
        TriggerKind.time: f"due {trigger.value}",
        TriggerKind.app: f"when opening {trigger.value}",
        TriggerKind.place: f"at {trigger.value}",
        TriggerKind.event: f"on {trigger.value}",
    }[trigger.kind]


# -- episode context ----------------------------------------------------------------------------
def episode_context(store: MemoryStore, goal: str, *, now: datetime | None = None, budget_chars: int = 1200, k: int = 8) -> str:
    """The "What you know about the user" section for ``goal``, or "" when nothing applies.
    Reminders shown here are marked fired, so each is shown once."""
    now = now or utcnow()
    reminders = due_intents(store, now=now, goal=goal)
    hits = store.search(goal, k=k, kinds=CONTEXT_KINDS, min_score=MIN_CONTEXT_SCORE, now=now) if not store.empty() else []
    lines = [(f"Reminder: {m.text} (you asked to be reminded {_why(m.trigger)})", m.id) for m in reminders if m.trigger]
    lines += [(f"- {h.memory.text} [{_KIND_LABEL[h.memory.kind]}]", None) for h in hits]
    footer = "Use what applies to the goal; recall(query) looks up more, remember(text, kind) keeps what the user asks you to."
    body, fired, used = [], [], len(SECTION_TITLE) + len(footer) + 2
    for line, reminder in lines:
        if used + len(line) + 1 > budget_chars:
            break
        body.append(line)
        used += len(line) + 1
        if reminder is not None:
            fired.append(reminder)
    store.mark_fired(fired, now)
    return "\n".join([SECTION_TITLE, *body, footer]) if body else ""


def _outcome(traj: Trajectory) -> tuple[str, float]:
    if traj.verdict is not None:
        return ("done, and the check passed", 1.0) if traj.verdict.success else ("not done: the check failed", 0.4)
    return {
        TrajectoryStatus.finished: ("finished", 0.7),
        TrajectoryStatus.truncated: ("stopped at the step limit", 0.3),
        TrajectoryStatus.infra_error: ("stopped by a device fault", 0.3),
    }.get(traj.status, ("interrupted", 0.3))


def should_record(traj: Trajectory) -> bool:
    """Whether an episode leaves an episodic summary (the rule in the module docstring)."""
    passed = traj.verdict is None or traj.verdict.success
    return traj.status is TrajectoryStatus.finished and passed and traj.planner != "scripted"


def record_episode(store: MemoryStore, traj: Trajectory) -> Memory | None:
    """Write the episodic summary of a finished episode (goal, outcome and answer, no model
    call) when :func:`should_record` allows it; returns it, or ``None`` when nothing was written."""
    if not should_record(traj):
        return None
    outcome, confidence = _outcome(traj)
    text = f'{traj.started_at:%Y-%m-%d}: asked "{traj.goal}"; {outcome}'
    if traj.answer:
        text += f'; answer: "{traj.answer[:300]}"'
    return store.add(Memory(kind=MemoryKind.episodic, text=text, provenance=traj.id, confidence=confidence))


# -- export / import ----------------------------------------------------------------------------
def export_jsonl(store: MemoryStore, path: Path | str, *, kinds: Iterable[MemoryKind] | None = None) -> int:
    """Oldest first, one JSON record a line (no embeddings: they are recomputed on import)."""
    items = list(reversed(store.list(kinds=kinds)))
    with open(path, "w", encoding="utf-8") as out:
        for memory in items:
            out.write(memory.to_json() + "\n")
    return len(items)


def import_jsonl(store: MemoryStore, path: Path | str) -> tuple[int, int]:
    """Add the records of an export; returns (added, skipped because the id is already here).
    A bad line raises :class:`StoreError` naming it, and then nothing is added."""
    return store.add_many(read_jsonl(path))


def read_jsonl(path: Path | str) -> list[Memory]:
    """The records of an export, all checked; a line that is not one raises :class:`StoreError`."""
    items = []
    try:
        with open(path, "rb") as src:  # decoded line by line, so a bad byte is reported with its line
            for number, raw in enumerate(src, 1):
                try:
                    line = raw.decode("utf-8")
                    if line.strip():
                        items.append(Memory.model_validate(json.loads(line)))
                except UnicodeDecodeError as exc:
                    raise StoreError(f"{path}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start}): not a memory export") from exc
                except (ValueError, ValidationError) as exc:
                    raise StoreError(f"{path}:{number}: not a memory record: {str(exc).splitlines()[0]}") from exc
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return items
