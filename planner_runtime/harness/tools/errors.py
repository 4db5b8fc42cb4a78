"""The failures a tool raises for a mistake the planner can act on; the funnel
(:meth:`~planner_runtime.harness.tools.ToolSet.execute`) turns each into feedback.

They live apart from the tool framework so the guarded device, which raises :class:`Blocked`,
depends on nothing above it.
"""

from __future__ import annotations

from planner_runtime.contract import ErrorCode, FeedbackStatus
from planner_runtime.errors import PlannerRuntimeError


class ToolFailure(PlannerRuntimeError):
    """A failure the planner caused and can act on (wrong element, app missing...); the
    tool set turns it into feedback, so it never leaves a tool call."""

    status = FeedbackStatus.error

    def __init__(self, code: ErrorCode, hint: str) -> None:
        super().__init__(hint)
        self.code, self.hint = code, hint


class Blocked(ToolFailure):
    """The safety gate stopped an action inside a tool (e.g. a tap on a Send button)."""

    status = FeedbackStatus.blocked

    def __init__(self, hint: str) -> None:
        super().__init__(ErrorCode.unsafe_action, hint)
