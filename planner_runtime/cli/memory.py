"""``planner-agent memory list|add|forget|export|import``: a user's memory profile from the shell.

Each profile is one SQLite file under ``<home>/profiles/<name>/`` (``--profile``, default
``default``). ``list --query`` ranks by the same hybrid retrieval the episodes use; ``--json``
prints records as they are exported.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

import typer

from planner_runtime.cli.common import console, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

if TYPE_CHECKING:
    from planner_runtime.harness.memory.search import MemoryStore

memory_app = typer.Typer(help="What the assistant knows about you: preferences, facts, past episodes, reminders.", no_args_is_help=True)

_PROFILE = typer.Option("default", "--profile", help="The memory profile (one SQLite file each).")
_KINDS = typer.Option(None, "--kind", "-k", help="Only this kind: preference, episodic, fact, intent (repeatable).")
_JSON = typer.Option(False, "--json", help="Print JSON.")


@contextmanager
def run_memory(home: Path, profile: str | None, disabled: bool, is_task: bool) -> Iterator[MemoryStore | None]:
    """The open profile store for ``planner-agent run``: none with ``--no-memory``, and none for a
    task run without an explicit ``--profile`` (the task's own scratch memory is used then)."""
    from planner_runtime.harness.memory.episodes import DEFAULT_PROFILE, profile_store

    if disabled or (is_task and profile is None):
        yield None
        return
    with profile_store(home, profile or DEFAULT_PROFILE) as store:
        yield store


def _store(profile: str, *, embeddings: bool = False):  # noqa: ANN202 - MemoryStore
    from planner_runtime.harness.memory.episodes import profile_store

    try:
        return profile_store(Settings.from_env().home, profile, embedder="auto" if embeddings else None)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


def _exists(profile: str) -> bool:
    """Whether the profile has a file. A verb that only reads or deletes never creates one: a
    mistyped ``--profile`` is an error, and the default profile before its first memory is empty."""
    from planner_runtime.harness.memory.episodes import DEFAULT_PROFILE, profile_path

    try:
        found = profile_path(Settings.from_env().home, profile).is_file()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if not found and profile != DEFAULT_PROFILE:
        raise _missing(profile)
    return found


def _missing(profile: str) -> typer.Exit:
    from planner_runtime.harness.memory.episodes import profile_path

    root = profile_path(Settings.from_env().home).parent.parent
    known = sorted(p.parent.name for p in root.glob("*/memory.sqlite")) if root.is_dir() else []
    return fail(f"no memory profile {profile!r} (profiles: {', '.join(known) or 'none yet'}); `memory add` or `memory import` creates one")


def _kinds(values: Optional[list[str]]):  # noqa: ANN202 - list[MemoryKind] | None
    from planner_runtime.harness.memory.episodes import MemoryKind

    if not values:
        return None
    try:
        return [MemoryKind(v) for v in values]
    except ValueError as exc:
        raise fail(f"{exc}; kinds are {', '.join(MemoryKind)}") from exc


def _line(memory, score: float | None = None) -> str:  # noqa: ANN001 - Memory
    extra = []
    if memory.trigger is not None:
        extra.append(f"trigger {memory.trigger}")
    if memory.expires_at is not None:
        extra.append(f"expires {memory.expires_at:%Y-%m-%d %H:%M}")
    if memory.fired_at is not None:
        extra.append("fired")
    extra.append(f"from {memory.provenance}, confidence {memory.confidence:.2f}, {memory.created_at:%Y-%m-%d}")
    shown = f"  [dim]score {score:.3f}[/dim]" if score is not None else ""
    return f"[bold]{memory.id}[/bold]  [cyan]{memory.kind.value}[/cyan]  {memory.text}  [dim]({'; '.join(extra)})[/dim]{shown}"


@memory_app.command("list")
def memory_list(
    kind: Optional[list[str]] = _KINDS,
    query: Optional[str] = typer.Option(None, "--query", "-q", help="Rank by relevance to this text (hybrid FTS5 + embeddings)."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="At most this many."),
    no_embeddings: bool = typer.Option(False, "--no-embeddings", help="With --query: FTS5 ranking only (no model load)."),
    profile: str = _PROFILE,
    as_json: bool = _JSON,
) -> None:
    """List memories, newest first, or ranked by --query."""
    kinds = _kinds(kind)
    if not _exists(profile):
        print("[]") if as_json else console.print(f"no memories in profile {profile!r}")
        return
    try:
        with _store(profile, embeddings=query is not None and not no_embeddings) as store:
            if query is not None:
                hits = store.search(query, k=limit, kinds=kinds, touch=False)
                rows = [(h.memory, h.score) for h in hits]
            else:
                rows = [(m, None) for m in store.list(kinds=kinds, limit=limit)]
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        out = [m.model_dump(mode="json") | ({"score": s} if s is not None else {}) for m, s in rows]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return
    for memory, score in rows:
        console.print(_line(memory, score))
    if not rows:
        console.print("no memories" + (" match" if query else f" in profile {profile!r}"))


@memory_app.command("add")
def memory_add(
    text: str = typer.Argument(..., help="What to remember, e.g. 'I wake up at 6:45 on weekdays'."),
    kind: str = typer.Option("preference", "--kind", "-k", help="preference, fact, episodic or intent."),
    trigger: Optional[str] = typer.Option(None, "--trigger", help="For an intent: app:NAME, time:YYYY-MM-DDTHH:MM, place:NAME or event:NAME."),
    expires: Optional[datetime] = typer.Option(None, "--expires", help="For an intent: when it lapses unfired."),
    confidence: float = typer.Option(1.0, "--confidence", min=0.0, max=1.0),
    profile: str = _PROFILE,
    as_json: bool = _JSON,
) -> None:
    """Add a memory (provenance: user)."""
    from pydantic import ValidationError

    from planner_runtime.harness.memory.episodes import Memory, Trigger

    try:
        memory = Memory(
            kind=_kinds([kind])[0],
            text=text,
            confidence=confidence,
            trigger=Trigger.parse(trigger) if trigger else None,
            expires_at=expires,
        )
    except ValidationError as exc:
        raise fail("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from exc
    except ValueError as exc:
        raise fail(str(exc)) from exc
    try:
        with _store(profile) as store:
            store.add(memory)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(memory.to_json())
    else:
        console.print(f"remembered {memory.id} ({memory.kind.value}) in profile {profile!r}")


@memory_app.command("forget")
def memory_forget(
    ids: Optional[list[str]] = typer.Argument(None, help="Memory ids to delete."),
    query: Optional[str] = typer.Option(None, "--query", "-q", help="Delete every memory containing all these words."),
    kind: Optional[list[str]] = _KINDS,
    yes: bool = typer.Option(False, "--yes", "-y", help="With --query: do not ask."),
    profile: str = _PROFILE,
    as_json: bool = _JSON,
) -> None:
    """Delete memories by id, or all that match --query (after showing them)."""
    if not ids and query is None:
        raise fail("give memory ids or --query")
    if query is not None and not yes and not sys.stdin.isatty():
        raise fail("memory forget --query asks before deleting and there is no terminal to ask on: pass --yes to delete what matches")
    try:
        with _store(profile) if _exists(profile) else nullcontext() as store:
            targets = list(ids or [])
            if query is not None and store is not None:
                matched = store.matching(query, kinds=_kinds(kind))
                if not as_json:
                    for memory in matched:
                        console.print(_line(memory))
                if matched and not yes and not typer.confirm(f"Forget these {len(matched)}?", default=False, err=True):
                    raise typer.Exit(1)
                targets += [m.id for m in matched]
            deleted = store.forget(targets) if store is not None else 0
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps({"deleted": deleted}))
    else:
        console.print(f"forgot {deleted} memor{'y' if deleted == 1 else 'ies'}")
    if ids and deleted < len(set(ids)) and query is None:
        raise fail(f"{len(set(ids)) - deleted} of the ids were not in profile {profile!r}", 1)


@memory_app.command("export")
def memory_export(
    path: Path = typer.Argument(..., help="JSONL file to write."),
    kind: Optional[list[str]] = _KINDS,
    profile: str = _PROFILE,
    as_json: bool = _JSON,
) -> None:
    """Write a profile's memories to JSONL (one record a line, oldest first)."""
    from planner_runtime.harness.memory.episodes import export_jsonl

    if not _exists(profile):
        raise _missing(profile)
    try:
        with _store(profile) as store:
            count = export_jsonl(store, path, kinds=_kinds(kind))
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"{path}: cannot write it: {exc.strerror or exc}") from exc
    if as_json:
        print(json.dumps({"path": str(path), "profile": profile, "count": count}))
    else:
        console.print(f"{path}: {count} memories from profile {profile!r}")


@memory_app.command("import")
def memory_import(
    path: Path = typer.Argument(..., help="A JSONL file written by `memory export`."),
    profile: str = _PROFILE,
) -> None:
    """Add the memories of a JSONL export; ids already in the profile are skipped."""
    from planner_runtime.harness.memory.episodes import read_jsonl

    try:
        items = read_jsonl(path)  # before the profile is opened: a bad file creates no profile
        with _store(profile) as store:
            added, skipped = store.add_many(items)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"imported {added} memories into profile {profile!r} ({skipped} already there)")
