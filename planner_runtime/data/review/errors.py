"""The review queue's errors: one root under :class:`~planner_runtime.errors.PlannerRuntimeError`
and the refusals a caller may want to tell apart (an HTTP front answers 404 and 409 with them)."""

from __future__ import annotations

from planner_runtime.errors import PlannerRuntimeError


class ReviewError(PlannerRuntimeError):
    """A review request that cannot be done as asked: a bad decision, label or reviewer name."""


class UnknownItem(ReviewError):
    """No review item (or trajectory) with that id."""


class LeaseHeld(ReviewError):
    """Another reviewer holds the item's lease; it is theirs until they decide or it expires."""


class AlreadyResolved(ReviewError):
    """The item's required reviews already agreed; its resolution is final."""


class AlreadyReviewed(ReviewError):
    """This reviewer already decided the item; a second review must come from someone else."""
