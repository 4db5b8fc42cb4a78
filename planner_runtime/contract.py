"""Contract records shared by every layer: action → feedback → verification.

A planner emits :class:`ToolCall` s; the harness answers each with :class:`Feedback`; a verifier
judges the end state with a :class:`Verdict`; every turn is kept as a :class:`Step` inside a
:class:`Trajectory`. All records are frozen pydantic models that round-trip through JSON, so the
trajectory store, replay, export and training read exactly what the episode loop wrote.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """Base for contract records: immutable, strict about unknown fields, JSON round-trip."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes):  # noqa: ANN206 - returns cls
        return cls.model_validate_json(data)


def new_id(prefix: str = "") -> str:
    return f"{prefix}{uuid.uuid4().hex[:16]}"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Role(StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"
    tool = "tool"


class Message(Record):
    """One chat message as rendered to the planner."""

    role: Role
    content: str
    tool_call_id: str | None = None


class ToolSpec(Record):
    """A tool as the planner sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(Record):
    """A structured action chosen by the planner."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str = Field(default_factory=lambda: new_id("call_"))


class FeedbackStatus(StrEnum):
    ok = "ok"
    error = "error"
    blocked = "blocked"
    needs_confirmation = "needs_confirmation"


class ErrorCode(StrEnum):
    """Closed list of error codes the planner can act on."""

    malformed_output = "malformed_output"
    no_tool_call = "no_tool_call"
    too_many_calls = "too_many_calls"
    unknown_tool = "unknown_tool"
    invalid_arguments = "invalid_arguments"
    element_not_found = "element_not_found"
    app_not_installed = "app_not_installed"
    permission_denied = "permission_denied"
    device_offline = "device_offline"
    ui_server_down = "ui_server_down"
    timeout = "timeout"
    unsafe_action = "unsafe_action"
    repeated_action = "repeated_action"
    action_failed = "action_failed"
    no_user = "no_user"  # ask_user: nobody is there to answer


class ToolError(Record):
    code: ErrorCode
    hint: str = ""


class Observation(Record):
    """What the planner gets to see of the screen after an action."""

    package: str = ""
    activity: str = ""
    screen: str = ""  # compact text form of the element list
    digest: str = ""  # stable hash of the screen content
    changes: str = ""  # what changed since the screen the planner saw last ("" when first or unknown)
    screenshot: str | None = None  # content-addressed artifact reference


class Feedback(Record):
    """The harness's answer to one ToolCall (or to output that held none)."""

    call_id: str
    status: FeedbackStatus
    result: Any = None
    error: ToolError | None = None
    observation: Observation | None = None
    note: str = ""  # what the harness did around the call, e.g. a retry after a transient device fault

    @classmethod
    def ok(cls, call_id: str, result: Any = None, observation: Observation | None = None) -> Feedback:
        return cls(call_id=call_id, status=FeedbackStatus.ok, result=result, observation=observation)

    @classmethod
    def fail(cls, call_id: str, code: ErrorCode, hint: str = "") -> Feedback:
        return cls(call_id=call_id, status=FeedbackStatus.error, error=ToolError(code=code, hint=hint))


class FailureKind(StrEnum):
    agent = "agent"  # the planner did the wrong thing
    infra = "infra"  # the device or the runtime failed; never a planner failure, never a reward
    spec = "spec"  # the task itself is broken


class Check(Record):
    name: str
    passed: bool
    evidence: str = ""


class Verdict(Record):
    success: bool
    score: float = Field(ge=0.0, le=1.0)
    checks: tuple[Check, ...] = ()
    failure_kind: FailureKind | None = None


class Usage(Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class TurnTokens(Record):
    """What RL needs of one model turn, when the backend gives it (the local planner and ``serve``).

    ``prompt_ids`` are the token ids the model read and ``completion_ids`` those of its answer
    (the assistant message's text: a prefill the harness forced is part of it). ``logprobs`` holds
    one entry per completion token: its log-probability under the model's own distribution
    (temperature 1, before any grammar mask), the quantity a trainer recomputes. ``sampled`` is
    ``True`` where the model chose the token and ``False`` where it was forced (a prefill, or a
    position where the grammar allowed exactly one token): only sampled tokens carry a policy
    gradient. ``tokenizer`` names the vocabulary the ids belong to.
    """

    prompt_ids: tuple[int, ...] = ()
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    sampled: tuple[bool, ...] = ()
    tokenizer: str = ""


class Step(Record):
    """One planner turn: its model input, output, action and feedback.

    With ``messages_new`` (every step the harness writes), ``messages`` holds only what this
    turn added to the model input (the system prompt and goal at the first turn, the previous
    answer and its tool response after), so a trajectory grows linearly with its length; the
    whole input is :meth:`Trajectory.messages_at`. Records written before that hold the whole
    input in ``messages`` (``messages_new`` false), and so does a turn whose input does not
    extend the previous one."""

    index: int
    messages: tuple[Message, ...]
    messages_new: bool = False  # True: ``messages`` extends the previous step's input; False: it is the whole input
    raw_output: str
    tool_call: ToolCall | None
    feedback: Feedback
    usage: Usage = Usage()
    plan_seconds: float = 0.0
    act_seconds: float = 0.0
    observation_digest: str = ""
    started_at: datetime = Field(default_factory=utcnow)
    tokens: TurnTokens | None = None  # token ids, logprobs and the sampled mask, when the backend gives them


class Source(StrEnum):
    sandbox = "sandbox"  # the built-in virtual phone
    simulated = "simulated"  # LLM-simulated tools
    real = "real"  # a real phone or emulator


class DataSource(StrEnum):
    """Where a trajectory's turns came from, as training data: a task's reference solution, a
    teacher model over an OpenAI-compatible endpoint, or the local planner itself (rejection
    sampling, self-play). A scripted or unknown planner's trajectory has none."""

    demo = "demo"
    teacher = "teacher"
    self = "self"

    @classmethod
    def of_planner(cls, planner: str) -> DataSource | None:
        """The data source a planner's episodes are, by the planner's name."""
        return {"demo": cls.demo, "openai": cls.teacher, "local": cls.self}.get(planner)


class TrajectoryStatus(StrEnum):
    running = "running"
    finished = "finished"  # the planner called finish
    truncated = "truncated"  # a step, token or time limit ended it
    infra_error = "infra_error"  # the device or runtime failed
    interrupted = "interrupted"  # the process died or was stopped mid-episode


class DeviceRef(Record):
    serial: str
    model: str = ""
    kind: str = "adb"


class Trajectory(Record):
    id: str = Field(default_factory=lambda: new_id("traj_"))
    task_id: str | None = None
    goal: str
    source: Source
    device: DeviceRef
    planner: str
    planner_release: str = ""
    harness_release: str = ""
    data_source: DataSource | None = None  # what kind of training data its turns are
    tools: tuple[ToolSpec, ...] = ()  # what the planner was offered: with messages_at(i), the exact input
    collection: str | None = None  # the `collect` run this episode belongs to
    item: str | None = None  # its work item in that run, "<task id>#<repeat>"
    parent: str | None = None  # a sub-agent's episode: the trajectory that delegated it
    status: TrajectoryStatus = TrajectoryStatus.running
    answer: str | None = None
    steps: tuple[Step, ...] = ()
    verdict: Verdict | None = None
    usage: Usage = Usage()
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None

    def messages_at(self, index: int) -> tuple[Message, ...]:
        """The exact model input of step ``index`` (system prompt, goal, earlier turns, tool
        responses), rebuilt from what each step added."""
        return model_input(self.steps, index)


def model_input(steps: Sequence[Step], index: int) -> tuple[Message, ...]:
    """The model input of ``steps[index]``: the nearest whole input at or before it (the first
    step's, or a record that holds its whole input), then what each later step added."""
    if not 0 <= index < len(steps):
        raise IndexError(f"step {index} of {len(steps)}")
    start = index
    while start > 0 and steps[start].messages_new:
        start -= 1
    messages = list(steps[start].messages)
    for step in steps[start + 1 : index + 1]:
        messages += step.messages
    return tuple(messages)


def added_messages(before: Sequence[Message], now: Sequence[Message]) -> tuple[Message, ...] | None:
    """What ``now`` adds after ``before``, or ``None`` when ``now`` does not start with ``before``."""
    if len(now) < len(before) or tuple(now[: len(before)]) != tuple(before):
        return None
    return tuple(now[len(before):])
