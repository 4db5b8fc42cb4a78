"""What the review queue decided about each trajectory, as the data builder reads it.

A trajectory's resolved items decide its label: any ``reject`` keeps it out of every dataset;
a ``relabel`` replaces the verifier's success with the reviewers' (the last resolved relabel
wins); otherwise ``approve``. A trajectory with no resolved item has no label here, and
:func:`pending` says which of those are still waiting on a person.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from sqlalchemy import select
from sqlalchemy.engine import Connection

from planner_runtime.trajectories.schema import review_items


class Resolution(str, Enum):
    approve = "approve"
    reject = "reject"
    relabel = "relabel"


@dataclass(frozen=True)
class FinalLabel:
    """The reviewers' word on one trajectory: ``success`` is the label to train with when
    ``resolution`` is ``relabel``, else ``None`` (the verifier's verdict stands)."""

    trajectory_id: str
    resolution: Resolution
    success: bool | None
    reasons: tuple[str, ...]  # the items' reasons that were resolved

    @property
    def excluded(self) -> bool:
        return self.resolution is Resolution.reject


def final_labels(conn: Connection) -> dict[str, FinalLabel]:
    """Every trajectory with at least one resolved review item, by id."""
    rows = conn.execute(
        select(review_items.c.trajectory_id, review_items.c.resolution, review_items.c.label_success, review_items.c.reason)
        .where(review_items.c.status == "resolved")
        .order_by(review_items.c.resolved_at, review_items.c.id)
    ).all()
    found: dict[str, FinalLabel] = {}
    for row in rows:
        resolution = Resolution(row.resolution)
        before = found.get(row.trajectory_id)
        reasons = (*(before.reasons if before else ()), row.reason)
        if before is not None and before.excluded:
            found[row.trajectory_id] = FinalLabel(row.trajectory_id, Resolution.reject, None, reasons)
        elif resolution is Resolution.reject:
            found[row.trajectory_id] = FinalLabel(row.trajectory_id, Resolution.reject, None, reasons)
        elif resolution is Resolution.relabel:
            found[row.trajectory_id] = FinalLabel(row.trajectory_id, Resolution.relabel, bool(row.label_success), reasons)
        elif before is not None:  # an approve after a relabel keeps the relabel
            found[row.trajectory_id] = FinalLabel(row.trajectory_id, before.resolution, before.success, reasons)
        else:
            found[row.trajectory_id] = FinalLabel(row.trajectory_id, Resolution.approve, None, reasons)
    return found


def pending(conn: Connection) -> dict[str, tuple[str, ...]]:
    """Trajectories with an item still open, by id, with those items' reasons."""
    rows = conn.execute(
        select(review_items.c.trajectory_id, review_items.c.reason).where(review_items.c.status == "open")
    ).all()
    found: dict[str, tuple[str, ...]] = {}
    for row in rows:
        found[row.trajectory_id] = (*found.get(row.trajectory_id, ()), row.reason)
    return found
