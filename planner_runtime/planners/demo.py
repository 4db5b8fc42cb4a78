"""Demo planner: plays a task's reference solution turn by turn, as a model would write it.

Each turn is the next call of the task's demo written in the ``<tool_call>`` form a model emits,
read back by the same parser, so a stored demo episode is exactly what supervised fine-tuning
trains on. A demo is linear: a ``delegate`` call's sub-agent plans with this same planner, so
the sub-agent's calls follow the ``delegate`` in the demo and the parent's resume after its
``finish``. The planner knows nothing of tasks: the caller renders the task's demo
(:meth:`~planner_runtime.tasks.spec.TaskSpec.rendered_demo`) and passes the calls.
"""

from __future__ import annotations

from typing import Sequence

from planner_runtime.contract import Message, ToolCall, ToolSpec
from planner_runtime.errors import ConfigError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.scripted import ScriptedPlanner

NEEDS_TASK = "--planner demo plays a task's demo: give --task ID (a free-form goal has none)"


class DemoPlanner:
    """Emits the demo's calls one per turn; past its end (a demo ends with ``finish``, so only
    when a call was refused and the episode went on) it finishes as the scripted planner does."""

    name = "demo"

    def __init__(self, calls: Sequence[ToolCall] = (), *, release: str = "demo") -> None:
        if not calls:
            raise ConfigError(NEEDS_TASK)
        self.release = release
        self._script = ScriptedPlanner(calls, release=release)

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        return self._script.plan(messages, tools, sampling=sampling)
