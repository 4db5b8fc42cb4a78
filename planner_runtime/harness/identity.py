"""Who an episode is: where it came from and what it belongs to, as one frozen record.

Every entry that starts an episode (``run``, ``collect``, ``replay``, a delegated sub-agent)
says the same six things about it — the trajectory source, the device, the task, the
collection and work item, the parent trajectory — and the stored
:class:`~planner_runtime.contract.Trajectory` keeps them as flat fields so that queries and old
stores stay as they are. :meth:`EpisodeIdentity.header` is the one place those fields are
filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from planner_runtime.contract import DataSource, DeviceRef, Source, ToolSpec, Trajectory
from planner_runtime.harness.revision import current as current_revision


@dataclass(frozen=True)
class EpisodeIdentity:
    """Where an episode runs and what it is part of; everything but ``device`` is optional."""

    device: DeviceRef
    source: Source = Source.sandbox
    task: str | None = None  # the task id, when the goal is a task's (seeded and verified)
    collection: str | None = None  # the ``collect`` run this episode belongs to
    item: str | None = None  # its work item in that run, ``"<task id>#<repeat>"``
    parent: str | None = None  # a sub-agent's episode: the trajectory that delegated it

    def for_task(self, task_id: str | None) -> EpisodeIdentity:
        """This identity for an episode of ``task_id`` (``None``: a free-form goal)."""
        return replace(self, task=task_id)

    def child(self, parent_id: str) -> EpisodeIdentity:
        """The identity of a sub-agent delegated by trajectory ``parent_id``: the same phone and
        source; no task, collection or item of its own (its parent is judged, not it)."""
        return EpisodeIdentity(device=self.device, source=self.source, parent=parent_id)

    def header(self, trajectory_id: str, goal: str, *, planner: str, planner_release: str,
               tools: Iterable[ToolSpec]) -> Trajectory:
        """The stored trajectory's header (no steps yet) for an episode of this identity."""
        return Trajectory(
            id=trajectory_id,
            task_id=self.task,
            goal=goal,
            source=self.source,
            device=self.device,
            planner=planner,
            planner_release=planner_release,
            harness_release=current_revision().release,
            data_source=DataSource.of_planner(planner),
            tools=tuple(tools),
            collection=self.collection,
            item=self.item,
            parent=self.parent,
        )
