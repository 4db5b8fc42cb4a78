"""The repeat guard: which calls an episode refuses to run again, and the feedback that says so.

Calls are compared by what the tool acts on — arguments validated, defaults filled, and resolved
the way the tool resolves them (:meth:`Tool.target`) — so ``{"name": "Ada", "email": ""}`` is the
same ``add_contact`` as ``{"name": "Ada"}``, and ``call`` to "+15550123", "+1 555 0123 " or the
name of the contact saved with that number is one call. Three rules:

* A sensitive effect runs once per episode: a call whose tool declares a category, or during
  which the gate allowed a sensitive effect (a tap on Send), is not run again with the same
  arguments, however many steps or screens lie between. Sub-agents share their parent's record,
  so delegating cannot repeat it either. The gate's confirmation is not asked a second time:
  its prompt does not say that the action already happened, so a "yes" there is no informed
  request to do it twice; a goal that needs it twice is a second episode.
* An app tool acts in one go (it saves, sets or sends and reports what it did), so the same
  app-tool call straight after it succeeded is refused, pointing at the first one's result.
* Any call repeated on an unchanged screen runs at most ``max_repeats`` times in a row (a GUI
  tap may rightly run twice: a "+" button).

``delegate`` is never refused: each run is a whole episode, whose outcome can differ, and the
sub-agent's own calls meet these rules.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from pydantic import ValidationError

from planner_runtime.contract import ErrorCode, Feedback, FeedbackStatus, ToolCall
from planner_runtime.harness.safety import GateRecord
from planner_runtime.harness.tools import ToolContext, ToolFailure, ToolSet

DELEGATE = "delegate"


@dataclass
class SensitiveRecord:
    """The sensitive calls that ran in one episode and its sub-agents: call key → where."""

    done: dict[str, str] = field(default_factory=dict)


_shared: ContextVar[SensitiveRecord | None] = ContextVar("planner_runtime_sensitive_record", default=None)


@contextmanager
def sensitive_record() -> Iterator[SensitiveRecord]:
    """The record of the episode in progress: a new one, or the enclosing episode's for a sub-agent."""
    record = _shared.get()
    if record is not None:
        yield record
        return
    record = SensitiveRecord()
    token = _shared.set(record)
    try:
        yield record
    finally:
        _shared.reset(token)


def call_key(tools: ToolSet, call: ToolCall, ctx: ToolContext | None = None) -> str:
    """The call as it will act: arguments validated, defaults filled and, given the phone
    (``ctx``), resolved as the tool resolves them. Arguments that do not validate, or a target
    the tool cannot resolve, stay as given: the tool set answers those with an error."""
    arguments = call.arguments
    if call.name in tools:
        tool = tools[call.name]
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError:
            pass  # not run at all: ToolSet.execute says what is wrong
        else:
            arguments = args.model_dump(mode="json")
            if ctx is not None:
                try:
                    arguments = tool.target(ctx, args)
                except ToolFailure:
                    pass  # the tool fails the same way when run, and does nothing
    return json.dumps([call.name, arguments], sort_keys=True, default=str)


@dataclass
class RepeatGuard:
    """One episode's memory of its calls; :meth:`refuse` before a call, :meth:`ran` after."""

    max_repeats: int
    sensitive: SensitiveRecord = field(default_factory=SensitiveRecord)
    ctx: ToolContext | None = None  # the phone targets are resolved on; None: compare validated arguments
    _keys: dict[str, str] = field(default_factory=dict)  # call id → key, resolved once before the call runs
    _recent: list[str] = field(default_factory=list)  # keys with the screen they ran on, last first
    _last_ok: str | None = None  # the previous call's key, when it succeeded

    def refuse(self, tools: ToolSet, call: ToolCall, screen: str) -> Feedback | None:
        """The feedback that stands in for ``call`` when it must not run; ``None``: run it."""
        if call.name == DELEGATE:
            return None
        key = self._keys[call.call_id] = call_key(tools, call, self.ctx)
        on_screen = json.dumps([key, screen])
        self._recent = [on_screen] + self._recent[: self.max_repeats]
        if key in self.sensitive.done:
            return _refusal(
                call,
                f"{call.name} with these arguments already ran ({self.sensitive.done[key]}) and had an effect that needs the "
                "user's consent, so it was not run again; check its result and go on, or finish",
            )
        app_tool = call.name in tools and tools[call.name].app is not None
        if app_tool and key == self._last_ok:
            return _refusal(
                call,
                f"{call.name} with these arguments just succeeded; it was not run again — its result is in the last "
                "feedback: check it and go on, or finish",
            )
        if len(self._recent) > self.max_repeats and len(set(self._recent)) == 1:
            return _refusal(
                call,
                f"{call.name} with these arguments already ran {self.max_repeats} times on this screen; "
                "it was not run again — try something else, or finish",
            )
        return None

    def ran(self, tools: ToolSet, call: ToolCall, feedback: Feedback, decided: Sequence[GateRecord], where: str) -> None:
        """Record ``call``'s outcome; ``decided``: the gate's decisions made during it."""
        if call.name == DELEGATE:
            self._last_ok = None
            return
        # resolved before it ran: what it did may change what its arguments resolve to now
        key = self._keys.pop(call.call_id, None) or call_key(tools, call, self.ctx)
        ok = feedback.status is FeedbackStatus.ok
        self._last_ok = key if ok else None
        declared = call.name in tools and tools[call.name].sensitive is not None
        # A failed call reported that nothing was done (a device fault mid-call is handled by
        # the episode, which never retries it); a refused one was not run at all.
        if ok and (declared or any(record.allowed for record in decided)):
            self.sensitive.done.setdefault(key, where)


def _refusal(call: ToolCall, hint: str) -> Feedback:
    return Feedback.fail(call.call_id, ErrorCode.repeated_action, hint)
