"""Demo planner: plays a task's reference solution turn by turn, as a model would write it.

Each turn is the next call of the task's demo written in the ``<tool_call>`` form a model emits,
read back by the same parser, so a stored demo episode is exactly what supervised fine-tuning
trains on. A demo is linear: a ``delegate`` call's sub-agent plans with this same planner, so
the sub-agent's calls follow the ``delegate`` in the demo and the parent's resume after its
``finish``. The planner knows nothing of tasks: the caller renders the task's demo
(:meth:`~planner_runtime.tasks.spec.TaskSpec.rendered_demo`) and passes the calls.
"""

from __future__ import annotations

import json
from typing import Sequence

from planner_runtime.contract import Message, Role, ToolCall, ToolSpec
from planner_runtime.errors import ConfigError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.scripted import ScriptedPlanner

NEEDS_TASK = "--planner demo plays a task's demo: give --task ID (a free-form goal has none)"


# What a detour episode answers when its wrong guess was accepted: it is then no detour demo, and
# the verifier fails it (the goal's work was never done), so it never becomes training data.
GUESS_ACCEPTED = "the detour's guess was accepted, so this episode is not a detour demo"


class DemoPlanner:
    """Emits the demo's calls one per turn; past its end (a demo ends with ``finish``, so only
    when a call was refused and the episode went on) it finishes as the scripted planner does.

    With a ``detour`` (:func:`~planner_runtime.tasks.detours.detour`) that call comes first; when
    the harness does not refuse it, the planner finishes at once instead of playing the demo."""

    name = "demo"

    def __init__(self, calls: Sequence[ToolCall] = (), *, detour: ToolCall | None = None, release: str = "demo") -> None:
        if not calls:
            raise ConfigError(NEEDS_TASK)
        self.release = release
        self._detoured = detour is not None
        self._script = ScriptedPlanner([*([detour] if detour is not None else []), *calls], release=release)

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        if self._detoured and self._script.turns == 1 and not _refused(messages):
            self._script = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": GUESS_ACCEPTED})], release=self.release)
            self._detoured = False
        return self._script.plan(messages, tools, sampling=sampling)


def _refused(messages: Sequence[Message]) -> bool:
    """Whether the last message is the harness's answer to a call, and that answer an error."""
    if not messages or messages[-1].role is not Role.tool:
        return False
    try:
        body = json.loads(messages[-1].content.split("\n", 1)[0])
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("status") == "error"
