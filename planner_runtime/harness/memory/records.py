"""Memory records: what the harness knows about a user, kept outside the model's weights.

A :class:`Memory` is a preference ("I wake up at 6:45 on weekdays"), a fact, an episodic summary
of a past episode, or an intent — something to do later, with a :class:`Trigger` (a time, an app
being opened, a place, an event) and an optional expiry. Every record says where it came from
(``provenance``: a trajectory id, ``task:<id>`` or ``user``) and how sure we are (``confidence``).
Records are frozen and round-trip through JSON, which is also the export format.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from planner_runtime.contract import Record, new_id, utcnow


class MemoryKind(StrEnum):
    preference = "preference"
    episodic = "episodic"
    fact = "fact"
    intent = "intent"


class TriggerKind(StrEnum):
    time = "time"  # value: an ISO date-time; fires once it has passed
    app = "app"  # value: an app name or package; fires when an episode opens that app
    place = "place"  # value: a place name; fires when the harness reports being there
    event = "event"  # value: an event name; fires when the harness reports it


class Trigger(Record):
    kind: TriggerKind
    value: str = Field(min_length=1)

    @model_validator(mode="after")
    def _time_parses(self) -> Trigger:
        if self.kind is TriggerKind.time:
            parse_time(self.value)
        return self

    @classmethod
    def parse(cls, text: str) -> Trigger:
        """``app:Messages``, ``time:2026-05-01T09:00``, ``place:office``, ``event:arrived_home``."""
        kind, sep, value = text.partition(":")
        if not sep or kind.strip() not in TriggerKind.__members__:
            raise ValueError(f"a trigger is KIND:VALUE with KIND one of {', '.join(TriggerKind)}; got {text!r}")
        return cls(kind=TriggerKind(kind.strip()), value=value.strip())

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.value}"


def parse_time(value: str) -> datetime:
    """An ISO date-time; one without a zone is taken as UTC."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"not an ISO date-time: {value!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class Memory(Record):
    id: str = Field(default_factory=lambda: new_id("mem_"))
    kind: MemoryKind
    text: str = Field(min_length=1, max_length=2000)
    provenance: str = "user"
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    created_at: datetime = Field(default_factory=utcnow)
    last_used_at: datetime | None = None
    trigger: Trigger | None = None  # intents only
    expires_at: datetime | None = None
    fired_at: datetime | None = None  # when an intent's reminder was shown

    @field_validator("text")
    @classmethod
    def _stripped(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("empty text")
        return value

    @field_validator("created_at", "last_used_at", "expires_at", "fired_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value

    @model_validator(mode="after")
    def _trigger_only_for_intents(self) -> Memory:
        if self.kind is MemoryKind.intent and self.trigger is None:
            raise ValueError("an intent needs a trigger (time, app, place or event)")
        if self.kind is not MemoryKind.intent and self.trigger is not None:
            raise ValueError("only intents have a trigger")
        return self

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class Hit(Record):
    """A retrieved memory with its score and the parts the score was made of."""

    memory: Memory
    score: float
    lexical: float = 0.0  # BM25, scaled to [0, 1] against the best match of the query
    semantic: float = 0.0  # cosine similarity of the sentence embeddings
