"""The core tools, for any phone whatever its apps: ``wait``, ``ask_user`` and ``finish``.

``wait`` and ``finish`` are in every default tool set (:mod:`.registry`). ``ask_user`` puts a
question to the person the planner works for; the run adds it with where the answers come from
(a terminal, scripted answers, a task's, nobody: an :data:`~planner_runtime.harness.tools.user.Answerer`).
Every question and answer stays in the trajectory as the step's call and feedback, so a verifier
can check that the user was asked before something was done. ``finish`` ends the episode.
"""

from __future__ import annotations

import time

from pydantic import Field

from planner_runtime.contract import ErrorCode
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.user import Answerer


class WaitArgs(ToolArgs):
    seconds: float = Field(ge=0.1, le=10, description="How long to wait for the screen to settle, in seconds")


class Wait(Tool):
    name = "wait"
    description = "Wait for something to load, then look at the screen again."
    Args = WaitArgs

    def run(self, ctx: ToolContext, args: WaitArgs) -> ToolResult:
        time.sleep(args.seconds)
        ctx.observe()
        return ToolResult(result={"waited_s": args.seconds}, observe=True)


class AskUserArgs(ToolArgs):
    question: str = Field(min_length=1, max_length=500, description="One short question for the user")


class AskUser(Tool):
    name = "ask_user"
    description = "Ask the user a question when the goal is ambiguous or a choice is theirs to make; the reply comes back as the result."
    Args = AskUserArgs

    def __init__(self, answer: Answerer | None = None) -> None:
        self.answer = answer

    def run(self, ctx: ToolContext, args: AskUserArgs) -> ToolResult:
        reply = self.answer(args.question) if self.answer is not None else None
        if reply is None:
            raise ToolFailure(
                ErrorCode.no_user,
                "no user is available to answer; decide from what you know, or finish saying what you need",
            )
        return ToolResult(result={"question": args.question, "answer": reply})


class FinishArgs(ToolArgs):
    answer: str = Field(default="", description="What was done, or the answer to the user's question")


class Finish(Tool):
    name = "finish"
    description = "End the task when the goal is reached (or cannot be), with a short answer for the user."
    Args = FinishArgs
    terminal = True

    def run(self, ctx: ToolContext, args: FinishArgs) -> ToolResult:
        return ToolResult(result={"answer": args.answer})
