"""Memory tools: ``remember(text, kind)`` keeps something for later episodes and
``recall(query)`` looks memories up, both on the profile the episode runs with.

What the planner stores carries the episode's trajectory id as provenance and a confidence
below what the user typed into ``planner-agent memory add``: the model may have misheard.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from planner_runtime.contract import ErrorCode
from planner_runtime.harness.memory.records import Memory, MemoryKind, Trigger
from planner_runtime.harness.memory.search import MemoryStore
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult

PLANNER_CONFIDENCE = 0.8
RECALL_MIN_SCORE = 0.1


class RememberArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=500, description="What to remember, as one plain sentence")
    kind: Literal["preference", "fact", "intent"] = Field(
        default="fact", description="preference (how the user likes things), fact, or intent (something to do later)"
    )
    trigger: str = Field(
        default="",
        description="For an intent: when to remind, as app:NAME, time:YYYY-MM-DDTHH:MM, place:NAME or event:NAME",
    )


class Remember(Tool):
    name = "remember"
    description = "Save something about the user for later conversations (a preference, a fact, or an intent with a trigger)."
    Args = RememberArgs

    def __init__(self, store: MemoryStore, provenance: str = "user") -> None:
        self.store, self.provenance = store, provenance

    def run(self, ctx: ToolContext, args: RememberArgs) -> ToolResult:
        trigger = None
        if args.kind == "intent" or args.trigger:
            if args.kind != "intent":
                raise ToolFailure(ErrorCode.invalid_arguments, "only an intent takes a trigger; use kind=intent or drop the trigger")
            try:
                trigger = Trigger.parse(args.trigger)
            except ValueError as exc:
                raise ToolFailure(ErrorCode.invalid_arguments, str(exc).splitlines()[0][:200]) from exc
        memory = self.store.add(
            Memory(kind=MemoryKind(args.kind), text=args.text, provenance=self.provenance, confidence=PLANNER_CONFIDENCE, trigger=trigger)
        )
        return ToolResult(result={"remembered": memory.text, "kind": memory.kind.value, "id": memory.id})


class RecallArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=300, description="What to look for, in plain words")


class Recall(Tool):
    name = "recall"
    description = "Look up what you know about the user: preferences, facts, reminders and past episodes that match the query."
    Args = RecallArgs

    def __init__(self, store: MemoryStore, k: int = 5) -> None:
        self.store, self.k = store, k

    def run(self, ctx: ToolContext, args: RecallArgs) -> ToolResult:
        hits = self.store.search(args.query, k=self.k, min_score=RECALL_MIN_SCORE)
        return ToolResult(
            result={
                "memories": [
                    {"text": h.memory.text, "kind": h.memory.kind.value, "saved": f"{h.memory.created_at:%Y-%m-%d}"} for h in hits
                ]
            }
        )


def memory_tools(store: MemoryStore, provenance: str) -> list[Tool]:
    return [Remember(store, provenance), Recall(store)]
