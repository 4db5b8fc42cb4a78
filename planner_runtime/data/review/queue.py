"""The review queue in the trajectory store: flag, lease, decide.

:func:`flag` inserts an item per (trajectory, reason) that :mod:`~planner_runtime.data.review.flags`
finds, once: running it again adds only what is new. A reviewer :func:`take` s the
highest-priority open item nobody else holds (one ``UPDATE … RETURNING`` picks and leases it,
so two reviewers, threads or processes, never get the same item), or :func:`lease` s one by id.
:func:`decide` approves, rejects or relabels it in one ``BEGIN IMMEDIATE`` transaction: an item
leased by someone else, resolved already, or decided before by the same reviewer is refused. An
item needs ``required_reviews`` agreeing decisions from different reviewers; that becomes 2 as
soon as a relabel disagrees with the verifier or a decision disagrees with an earlier one. Every
decision is kept in ``review_decisions``; a resolved item sets ``resolution``, ``label_success``
and ``resolved_at``, which :func:`~planner_runtime.data.review.labels.final_labels` reads.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Iterable, Iterator

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import SQLAlchemyError

from planner_runtime.contract import utcnow
from planner_runtime.data.review.errors import AlreadyResolved, AlreadyReviewed, LeaseHeld, ReviewError, UnknownItem
from planner_runtime.data.review.flags import PRIORITY, Flag, Reason, find_flags
from planner_runtime.data.review.labels import Resolution
from planner_runtime.errors import StoreError
from planner_runtime.sqlite_file import aware
from planner_runtime.trajectories.schema import review_decisions, review_items, trajectories
from planner_runtime.trajectories.store import TrajectoryStore

STATUSES = ("open", "resolved")
DEFAULT_TTL_S = 600.0  # a lease a reviewer forgot lapses after ten minutes
MAX_NAME = 80
MAX_NOTE = 4000


@dataclass(frozen=True)
class ReviewItem:
    """One reason to review one trajectory, and where its review stands (``reviews``: decisions so far)."""

    id: str
    trajectory_id: str
    reason: str
    detail: str
    priority: int
    status: str
    required_reviews: int
    lease_by: str | None
    lease_until: datetime | None
    resolution: str | None
    label_success: bool | None
    created_at: datetime
    resolved_at: datetime | None
    reviews: int = 0

    def leased_to(self, now: datetime | None = None) -> str | None:
        """Who holds the lease now (``None``: free, or lapsed)."""
        if self.lease_by is None or self.lease_until is None or self.lease_until <= (now or utcnow()):
            return None
        return self.lease_by

    def as_json(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ReviewDecision:
    """A reviewer's decision, kept even when a later one outweighs it."""

    id: int
    item_id: str
    reviewer: str
    decision: str
    label_success: bool | None
    note: str
    decided_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class FlagReport:
    added: tuple[ReviewItem, ...]  # items this call created
    found: int  # flags raised, new or already queued


@dataclass(frozen=True)
class Outcome:
    """What a decision did: the item after it and whether that resolved it."""

    item: ReviewItem
    decision: ReviewDecision
    resolved: bool


def item_id(trajectory_id: str, reason: str) -> str:
    """The id of the item for (trajectory, reason): the same flag always names the same item."""
    return "rev_" + hashlib.sha256(f"{trajectory_id}\0{reason}".encode()).hexdigest()[:16]


_REVIEWS = (select(func.count()).select_from(review_decisions)
            .where(review_decisions.c.item_id == review_items.c.id).scalar_subquery().label("reviews"))


def _item(row: Row) -> ReviewItem:
    m = row._mapping
    at = {k: (aware(m[k]) if m[k] is not None else None) for k in ("lease_until", "created_at", "resolved_at")}
    return ReviewItem(
        id=m["id"], trajectory_id=m["trajectory_id"], reason=m["reason"], detail=m["detail"] or "", priority=m["priority"],
        status=m["status"], required_reviews=m["required_reviews"], lease_by=m["lease_by"], resolution=m["resolution"],
        label_success=m["label_success"], reviews=m.get("reviews", 0) or 0, **at)


def _decision(row: Row) -> ReviewDecision:
    m = row._mapping
    return ReviewDecision(m["id"], m["item_id"], m["reviewer"], m["decision"], m["label_success"], m["note"] or "", aware(m["decided_at"]))


@contextmanager
def _immediate(store: TrajectoryStore) -> Iterator[Connection]:
    """A write transaction holding the file's write lock from its first statement: what it reads
    is still true when it writes (a deferred one could read, then lose the race to write)."""
    try:
        with store.engine.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
    except SQLAlchemyError as exc:
        raise StoreError(f"review queue in {store.path}: {exc}") from exc


def _reviewer(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ReviewError("a reviewer name is required (who decided)")
    if len(name) > MAX_NAME or any(ord(ch) < 32 for ch in name):
        raise ReviewError(f"reviewer name must be at most {MAX_NAME} printable characters")
    return name


def _ttl(seconds: float) -> timedelta:
    if not seconds > 0:
        raise ReviewError(f"a lease must last more than 0 seconds, not {seconds!r}")
    return timedelta(seconds=seconds)


# -- flagging ---------------------------------------------------------------------------------
def _insert(conn: Connection, flags: Iterable[Flag]) -> list[ReviewItem]:
    added: list[ReviewItem] = []
    now = utcnow()
    for f in flags:
        values = dict(id=item_id(f.trajectory_id, f.reason.value), trajectory_id=f.trajectory_id, reason=f.reason.value,
                      detail=f.detail, priority=f.priority, status="open", required_reviews=1, created_at=now)
        done = conn.execute(insert(review_items).values(**values).prefix_with("OR IGNORE")).rowcount
        if done:
            added.append(_item(conn.execute(select(review_items, _REVIEWS).where(review_items.c.id == values["id"])).one()))
    return added


def flag(store: TrajectoryStore, *, collection: str | None = None, since: datetime | None = None, **signals: Any) -> FlagReport:
    """Queue every flag of the trajectories of ``collection`` / started since ``since`` (all when
    neither) that is not queued yet. ``signals`` go to :func:`~planner_runtime.data.review.flags.find_flags`
    (``logprob_threshold``, ``check_kinds``)."""
    with store.engine.connect() as conn:
        flags = find_flags(conn, collection=collection, since=since, **signals)
    with _immediate(store) as conn:
        added = _insert(conn, flags)
    return FlagReport(tuple(added), len(flags))


def add(store: TrajectoryStore, trajectory_id: str, reason: Reason | str = Reason.manual, detail: str = "",
        priority: int | None = None) -> ReviewItem:
    """Queue one trajectory by hand (or from a signal kept elsewhere, like a replay's divergence);
    the item already queued for that reason is returned as it is."""
    try:
        why = Reason(reason)
    except ValueError:
        raise ReviewError(f"unknown reason {reason!r}: {', '.join(r.value for r in Reason)}") from None
    with _immediate(store) as conn:
        if conn.execute(select(trajectories.c.id).where(trajectories.c.id == trajectory_id)).first() is None:
            raise UnknownItem(f"no trajectory {trajectory_id!r} in {store.path}")
        _insert(conn, [Flag(trajectory_id, why, detail, PRIORITY[why] if priority is None else priority)])
    return get(store, item_id(trajectory_id, why.value))


# -- reading ----------------------------------------------------------------------------------
def items(store: TrajectoryStore, *, reason: str | None = None, status: str | None = None,
          trajectory_id: str | None = None, limit: int | None = None) -> list[ReviewItem]:
    """Items in review order: highest priority first, then oldest."""
    if reason is not None and reason not in {r.value for r in Reason}:
        raise ReviewError(f"unknown reason {reason!r}: {', '.join(r.value for r in Reason)}")
    if status is not None and status not in STATUSES:
        raise ReviewError(f"unknown status {status!r}: {', '.join(STATUSES)}")
    query = select(review_items, _REVIEWS).order_by(review_items.c.priority.desc(), review_items.c.created_at, review_items.c.id)
    for column, value in (("reason", reason), ("status", status), ("trajectory_id", trajectory_id)):
        if value is not None:
            query = query.where(review_items.c[column] == value)
    if limit is not None:
        query = query.limit(limit)
    with store.engine.connect() as conn:
        return [_item(row) for row in conn.execute(query)]


def get(store: TrajectoryStore, item: str) -> ReviewItem:
    with store.engine.connect() as conn:
        row = conn.execute(select(review_items, _REVIEWS).where(review_items.c.id == item)).first()
    if row is None:
        raise UnknownItem(f"no review item {item!r} in {store.path} (see `planner-agent review list`)")
    return _item(row)


def decisions(store: TrajectoryStore, item: str | None = None) -> list[ReviewDecision]:
    """The decisions on ``item`` (every item's when ``None``), oldest first."""
    query = select(review_decisions).order_by(review_decisions.c.id)
    if item is not None:
        query = query.where(review_decisions.c.item_id == item)
    with store.engine.connect() as conn:
        return [_decision(row) for row in conn.execute(query)]


# -- leases -----------------------------------------------------------------------------------
def _free_for(reviewer: str, now: datetime):  # noqa: ANN202 - a SQL condition
    r = review_items
    return r.c.lease_by.is_(None) | r.c.lease_until.is_(None) | (r.c.lease_until <= now) | (r.c.lease_by == reviewer)


def take(store: TrajectoryStore, reviewer: str, ttl: float = DEFAULT_TTL_S, *, reason: str | None = None,
         skip: Iterable[str] = ()) -> ReviewItem | None:
    """Lease the next open item for ``reviewer``: one they already hold first, else the
    highest-priority one that is free and that they have not decided; ``None`` when none is left."""
    who, span = _reviewer(reviewer), _ttl(ttl)
    r, d = review_items, review_decisions
    now = utcnow()
    decided = select(d.c.item_id).where(d.c.reviewer == who)
    pick = (select(r.c.id).where(r.c.status == "open", _free_for(who, now), r.c.id.not_in(decided))
            .order_by(func.coalesce(r.c.lease_by == who, False).desc(), r.c.priority.desc(), r.c.created_at, r.c.id).limit(1))
    if reason is not None:
        pick = pick.where(r.c.reason == reason)
    skipped = [s for s in skip if s]
    if skipped:
        pick = pick.where(r.c.id.not_in(skipped))
    with _immediate(store) as conn:
        row = conn.execute(update(r).where(r.c.id == pick.scalar_subquery(), r.c.status == "open", _free_for(who, now))
                           .values(lease_by=who, lease_until=now + span).returning(r.c.id)).first()
    return None if row is None else get(store, row.id)


def lease(store: TrajectoryStore, item: str, reviewer: str, ttl: float = DEFAULT_TTL_S) -> ReviewItem:
    """Lease ``item`` for ``reviewer`` (again: a lease they hold is extended). Refused when
    another reviewer holds it, it is resolved, or ``reviewer`` already decided it (a lease they
    could not use would only keep the second reviewer it waits for away)."""
    who, span = _reviewer(reviewer), _ttl(ttl)
    now = utcnow()
    with _immediate(store) as conn:
        found = _current(conn, store, item)
        _check_open(found, who, now)
        if conn.execute(select(review_decisions.c.id).where(review_decisions.c.item_id == item,
                                                            review_decisions.c.reviewer == who)).first() is not None:
            raise AlreadyReviewed(f"{who} already reviewed item {item}; it needs a decision from another reviewer")
        conn.execute(update(review_items).where(review_items.c.id == item).values(lease_by=who, lease_until=now + span))
    return get(store, item)


def release(store: TrajectoryStore, item: str, reviewer: str) -> None:
    """Give up ``reviewer``'s lease on ``item`` (nothing when they hold none)."""
    who = _reviewer(reviewer)
    with _immediate(store) as conn:
        conn.execute(update(review_items).where(review_items.c.id == item, review_items.c.lease_by == who)
                     .values(lease_by=None, lease_until=None))


def _current(conn: Connection, store: TrajectoryStore, item: str) -> ReviewItem:
    row = conn.execute(select(review_items, _REVIEWS).where(review_items.c.id == item)).first()
    if row is None:
        raise UnknownItem(f"no review item {item!r} in {store.path} (see `planner-agent review list`)")
    return _item(row)


def _check_open(found: ReviewItem, who: str, now: datetime) -> None:
    if found.status == "resolved":
        label = "" if found.label_success is None else f" as {'success' if found.label_success else 'failure'}"
        when = found.resolved_at.strftime("%Y-%m-%d %H:%M:%S UTC") if found.resolved_at else "?"
        raise AlreadyResolved(f"item {found.id} is already resolved ({found.resolution}{label}, {when}); its decision stands")
    holder = found.leased_to(now)
    if holder is not None and holder != who:
        until = found.lease_until.strftime("%H:%M:%S UTC") if found.lease_until else "?"
        raise LeaseHeld(f"item {found.id} is leased by {holder} until {until}: only they can decide it until then")


# -- deciding ---------------------------------------------------------------------------------
def _parse(decision: Resolution | str, label: bool | None) -> Resolution:
    try:
        choice = Resolution(decision)
    except ValueError:
        raise ReviewError(f"unknown decision {decision!r}: approve, reject or relabel") from None
    if choice is Resolution.relabel and label is None:
        raise ReviewError("relabel needs the label: success or failure")
    if choice is not Resolution.relabel and label is not None:
        raise ReviewError(f"{choice.value} takes no label (relabel sets one)")
    return choice


def _key(decision: str, label: bool | None) -> tuple[str, bool | None]:
    return decision, (label if decision == Resolution.relabel.value else None)


def decide(store: TrajectoryStore, item: str, reviewer: str, decision: Resolution | str, *, label: bool | None = None,
           note: str = "") -> Outcome:
    """Record ``reviewer``'s decision on ``item`` and resolve it once enough reviewers agree."""
    who, choice = _reviewer(reviewer), _parse(decision, label)
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise ReviewError(f"a note holds at most {MAX_NOTE} characters")
    now = utcnow()
    with _immediate(store) as conn:
        found = _current(conn, store, item)
        _check_open(found, who, now)
        earlier = [_decision(row) for row in conn.execute(select(review_decisions).where(review_decisions.c.item_id == item))]
        if any(d.reviewer == who for d in earlier):
            raise AlreadyReviewed(f"{who} already reviewed item {item}; it needs a decision from another reviewer")
        verifier = conn.execute(select(trajectories.c.success).where(trajectories.c.id == found.trajectory_id)).scalar()
        key = _key(choice.value, label)
        required = found.required_reviews
        if (choice is Resolution.relabel and label != verifier) or any(_key(d.decision, d.label_success) != key for d in earlier):
            required = max(required, 2)  # a reviewer against the verifier, or against each other: a second opinion
        agreeing = 1 + sum(_key(d.decision, d.label_success) == key for d in earlier)
        resolved = agreeing >= required
        new_id = conn.execute(insert(review_decisions).values(
            item_id=item, reviewer=who, decision=choice.value, label_success=label if choice is Resolution.relabel else None,
            note=note, decided_at=now)).inserted_primary_key[0]
        values: dict[str, Any] = dict(required_reviews=required, lease_by=None, lease_until=None)
        if resolved:
            values.update(status="resolved", resolution=choice.value, resolved_at=now,
                          label_success=label if choice is Resolution.relabel else None)
        conn.execute(update(review_items).where(review_items.c.id == item).values(**values))
    kept = ReviewDecision(new_id, item, who, choice.value, label if choice is Resolution.relabel else None, note, now)
    return Outcome(get(store, item), kept, resolved)
