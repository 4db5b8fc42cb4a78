"""Co-evolution rounds, as records: what each round started from, what a person decided about each
of its proposals, where it stands, its scores, and the final approval.

A round is bench → analyze → proposals → a person decides each → revise the harness and the
recipe → collect → build data → train → bench → gate → a person approves the promotion
(:mod:`planner_runtime.coevolve.stages` runs the stages). This module keeps the record in one
SQLite file (``$PLANNER_AGENT_HOME/rounds.sqlite``) so that two people deciding at once take
turns: every decision is a conditional update, and the second of two decisions on one proposal,
or a second approval of one round, is refused with who decided first. Nothing is ever deleted:
the events table keeps each stage's outcome with its time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, ForeignKey, Integer, MetaData, String, Table, Text, func, insert, select, update

from planner_runtime.contract import new_id, utcnow
from planner_runtime.coevolve import CoevolveError
from planner_runtime.sqlite_file import SqliteFile, aware


class RoundError(CoevolveError):
    """A round cannot do what was asked (unknown round or proposal, a decision already made, a
    stage that failed); the message says what and, where it helps, what to run instead."""


class Status(StrEnum):
    started = "started"  # created; the first bench has not finished
    deciding = "deciding"  # proposals written; waiting for a person to decide each
    training = "training"  # every proposal decided; revise, collect, build, train, bench next
    gated = "gated"  # benched after training; the gate's verdict is in results["gate"]
    promoted = "promoted"  # a person approved and the release is the default
    rejected = "rejected"  # a person rejected the round (or the gate held it back and they closed it)


class Decision(StrEnum):
    pending = "pending"
    approved = "approved"
    rejected = "rejected"


metadata = MetaData()

rounds = Table(
    "rounds", metadata,
    Column("id", String, primary_key=True),
    Column("number", Integer, nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("status", String, nullable=False),
    Column("stage", String, nullable=False, default=""),  # the last stage finished
    Column("from_release", String, nullable=False),
    Column("release", String),  # the release this round trains
    Column("options", JSON, nullable=False),
    Column("results", JSON, nullable=False),  # per stage: its outputs (bench ids, scores, counts)
    Column("approved_by", String),
    Column("approved_at", DateTime(timezone=True)),
    Column("note", Text, nullable=False, default=""),
)

proposals = Table(
    "round_proposals", metadata,
    Column("round_id", String, ForeignKey("rounds.id"), primary_key=True),
    Column("proposal_id", String, primary_key=True),
    Column("kind", String, nullable=False),
    Column("path", String, nullable=False),  # the proposal's JSON file in the round's folder
    Column("summary", Text, nullable=False, default=""),
    Column("decision", String, nullable=False),
    Column("decided_by", String),
    Column("decided_at", DateTime(timezone=True)),
    Column("note", Text, nullable=False, default=""),
)

events = Table(
    "round_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("round_id", String, ForeignKey("rounds.id"), nullable=False, index=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("stage", String, nullable=False),
    Column("message", Text, nullable=False),
)


@dataclass(frozen=True)
class ProposalRecord:
    proposal_id: str
    kind: str
    path: str
    summary: str
    decision: Decision
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str = ""


@dataclass(frozen=True)
class Round:
    id: str
    number: int
    created_at: datetime
    status: Status
    stage: str
    from_release: str
    release: str | None
    options: dict[str, Any]
    results: dict[str, Any]
    approved_by: str | None
    approved_at: datetime | None
    note: str
    proposals: tuple[ProposalRecord, ...] = field(default=())

    @property
    def undecided(self) -> list[str]:
        return [p.proposal_id for p in self.proposals if p.decision is Decision.pending]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "number": self.number, "created_at": self.created_at.isoformat(), "status": self.status.value,
                "stage": self.stage, "from_release": self.from_release, "release": self.release, "options": self.options,
                "results": self.results, "approved_by": self.approved_by,
                "approved_at": self.approved_at.isoformat() if self.approved_at else None, "note": self.note,
                "proposals": [{"id": p.proposal_id, "kind": p.kind, "path": p.path, "summary": p.summary,
                               "decision": p.decision.value, "decided_by": p.decided_by,
                               "decided_at": p.decided_at.isoformat() if p.decided_at else None, "note": p.note}
                              for p in self.proposals]}


def _who(by: str) -> str:
    name = " ".join(by.split())
    if not name:
        raise RoundError("--by: name the person who decides")
    return name


class RoundStore(SqliteFile):
    """The rounds file. Construct with its path, then :meth:`open` (or use as a context manager)."""

    metadata = metadata
    what = "rounds file"

    def new_round(self, from_release: str, options: dict[str, Any]) -> Round:
        """A new round, numbered after the last; ``options["release"]`` names the release it trains
        (default ``<from_release>-r<number>``)."""
        with self.engine.begin() as conn:
            number = (conn.execute(select(func.max(rounds.c.number))).scalar() or 0) + 1
            round_id = f"round-{number}-{new_id()[:6]}"
            options = {**options, "release": options.get("release") or f"{from_release}-r{number}"}
            conn.execute(insert(rounds).values(id=round_id, number=number, created_at=utcnow(), status=Status.started.value,
                                               stage="", from_release=from_release, options=options, results={}, note=""))
        self.log(round_id, "start", f"from release {from_release}")
        return self.get(round_id)

    def get(self, round_id: str) -> Round:
        with self.engine.connect() as conn:
            row = conn.execute(select(rounds).where(rounds.c.id == round_id)).first()
            if row is None and round_id.isdigit():
                row = conn.execute(select(rounds).where(rounds.c.number == int(round_id))).first()
            if row is None:
                raise RoundError(f"no round {round_id!r} in {self.path}")
            found = conn.execute(select(proposals).where(proposals.c.round_id == row.id).order_by(proposals.c.proposal_id)).all()
        return Round(row.id, row.number, aware(row.created_at), Status(row.status), row.stage, row.from_release, row.release,
                     dict(row.options), dict(row.results), row.approved_by, aware(row.approved_at) if row.approved_at else None,
                     row.note, tuple(ProposalRecord(p.proposal_id, p.kind, p.path, p.summary, Decision(p.decision), p.decided_by,
                                                    aware(p.decided_at) if p.decided_at else None, p.note) for p in found))

    def all(self) -> list[Round]:
        with self.engine.connect() as conn:
            ids = conn.execute(select(rounds.c.id).order_by(rounds.c.number)).scalars().all()
        return [self.get(i) for i in ids]

    def events(self, round_id: str) -> list[tuple[datetime, str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(events).where(events.c.round_id == round_id).order_by(events.c.id)).all()
        return [(aware(r.at), r.stage, r.message) for r in rows]

    def log(self, round_id: str, stage: str, message: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(events).values(round_id=round_id, at=utcnow(), stage=stage, message=message))

    def finish_stage(self, round_id: str, stage: str, outputs: dict[str, Any], *, status: Status | None = None,
                     release: str | None = None) -> Round:
        """Record ``stage`` as finished with its ``outputs`` (kept under ``results[stage]``)."""
        with self.engine.begin() as conn:
            row = conn.execute(select(rounds.c.results).where(rounds.c.id == round_id)).first()
            if row is None:
                raise RoundError(f"no round {round_id!r}")
            values: dict[str, Any] = {"stage": stage, "results": {**dict(row.results), stage: outputs}}
            if status is not None:
                values["status"] = status.value
            if release is not None:
                values["release"] = release
            conn.execute(update(rounds).where(rounds.c.id == round_id).values(**values))
        self.log(round_id, stage, "done")
        return self.get(round_id)

    def add_proposals(self, round_id: str, found: list[tuple[str, str, str, str]]) -> None:
        """Record proposals ``(id, kind, path, summary)`` as pending (one already recorded is kept)."""
        with self.engine.begin() as conn:
            have = set(conn.execute(select(proposals.c.proposal_id).where(proposals.c.round_id == round_id)).scalars())
            for proposal_id, kind, path, summary in found:
                if proposal_id not in have:
                    conn.execute(insert(proposals).values(round_id=round_id, proposal_id=proposal_id, kind=kind, path=path,
                                                          summary=summary, decision=Decision.pending.value, note=""))

    def decide(self, round_id: str, proposal_id: str, decision: Decision, *, by: str, note: str = "") -> ProposalRecord:
        """A person's decision on one proposal; a second decision on it is refused, naming the first."""
        who = _who(by)
        current = self.get(round_id)
        if current.status is not Status.deciding:
            raise RoundError(f"round {current.id} is {current.status.value}: its proposals are decided only while it is deciding")
        with self.engine.begin() as conn:
            done = conn.execute(update(proposals).where(
                proposals.c.round_id == current.id, proposals.c.proposal_id == proposal_id,
                proposals.c.decision == Decision.pending.value,
            ).values(decision=decision.value, decided_by=who, decided_at=utcnow(), note=note)).rowcount
        record = next((p for p in self.get(current.id).proposals if p.proposal_id == proposal_id), None)
        if record is None:
            raise RoundError(f"round {current.id} has no proposal {proposal_id!r}; `planner-agent round status {current.id}` lists them")
        if not done:
            raise RoundError(f"proposal {proposal_id} of round {current.id} was already {record.decision.value} "
                             f"by {record.decided_by} at {record.decided_at:%Y-%m-%d %H:%M:%S}Z")
        self.log(current.id, "decide", f"{proposal_id}: {decision.value} by {who}" + (f" ({note})" if note else ""))
        return record

    def close_round(self, round_id: str, status: Status, *, by: str, note: str = "", allowed: tuple[Status, ...]) -> Round:
        """Approve (``promoted``) or reject a round once; a second close is refused, naming the first."""
        who = _who(by)
        current = self.get(round_id)
        with self.engine.begin() as conn:
            done = conn.execute(update(rounds).where(
                rounds.c.id == current.id, rounds.c.status.in_([s.value for s in allowed]), rounds.c.approved_by.is_(None),
            ).values(status=status.value, approved_by=who, approved_at=utcnow(), note=note)).rowcount
        after = self.get(current.id)
        if not done:
            if after.approved_by:
                raise RoundError(f"round {after.id} was already {after.status.value} by {after.approved_by} "
                                 f"at {after.approved_at:%Y-%m-%d %H:%M:%S}Z")
            raise RoundError(f"round {after.id} is {after.status.value}: it can be "
                             f"{'approved' if status is Status.promoted else 'rejected'} only when {' or '.join(s.value for s in allowed)}")
        self.log(after.id, status.value, f"by {who}" + (f" ({note})" if note else ""))
        return after

    def reopen(self, round_id: str, status: Status, *, allowed: tuple[Status, ...]) -> bool:
        """Move a round from one of ``allowed`` to ``status``; False when another process did first."""
        with self.engine.begin() as conn:
            return bool(conn.execute(update(rounds).where(rounds.c.id == round_id, rounds.c.status.in_([s.value for s in allowed]))
                                     .values(status=status.value)).rowcount)
