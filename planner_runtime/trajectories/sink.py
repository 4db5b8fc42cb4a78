"""What an episode writes its trajectory through: the :class:`EpisodeSink` protocol.

The harness depends on this seam, not on the SQLite store, so an episode runs against any
sink (the store, a training buffer, a test's list) and importing the harness loads no database
code. :class:`~planner_runtime.trajectories.store.TrajectoryStore` implements it. The order is
fixed: :meth:`~EpisodeSink.begin` once, :meth:`~EpisodeSink.append_step` per turn as it ends
(a step must be kept before the next turn starts: a crash loses no finished turn), then
:meth:`~EpisodeSink.end` once, in ``finally``. Sub-agents' episodes write to the same sink with
a ``parent`` link, and :meth:`~EpisodeSink.usage` counts them, for the token limit.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from planner_runtime.contract import Step, Trajectory, TrajectoryStatus, Usage
from planner_runtime.cost import TokenUsage


@runtime_checkable
class EpisodeSink(Protocol):
    """Where an episode's trajectory goes, turn by turn."""

    def begin(self, traj: Trajectory) -> None:
        """A new episode: its header (identity, tools offered; no steps yet)."""

    def append_step(self, trajectory_id: str, step: Step) -> None:
        """One finished turn, kept before the next one starts."""

    def end(self, trajectory_id: str, status: TrajectoryStatus, *, answer: str | None, usage: Usage) -> None:
        """How the episode ended and what its own turns cost."""

    def get(self, trajectory_id: str) -> Trajectory:
        """The trajectory as kept, steps included."""

    def usage(self, trajectory_id: str) -> TokenUsage:
        """The tokens ``trajectory_id`` has cost so far, its sub-agents' included."""
