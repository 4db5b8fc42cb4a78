"""Detours: a demo that opens with the wrong guess a small planner makes, so recovery is learnt.

Benched on held-out templates, the embedded planner's most common failure is to skip a lookup:
it cancels "my taxi to the Airport" with ``ride_cancel(ride="Airport")`` instead of finding the
ride's id with ``ride_history`` first, reads the tool's refusal ("no rides with id='Airport';
ride_history lists them with their details") and sends the same call again until the step limit. Reference demos
never show a refusal, so nothing teaches what to do after one.

A detour is the demo with one call in front: the first demo call that needs a value the goal
does not hold (an id that an earlier lookup gives), with that value replaced by a value of the
goal's own parameters, the guess a planner that skips the lookup makes. The tool refuses it
(no such id) and the demo then plays as written. In SFT data a turn that drew an error is
context, never a target (:func:`~planner_runtime.training.data.trained`), so the episode teaches
the turns after the refusal: the lookup, then the act with the looked-up value. The task's
verifier judges the whole episode as it judges the demo's, so a detour that did harm (a guess
that matched something and changed it) yields no training data; and the planner that plays it
finishes at once when the guess is accepted (:class:`~planner_runtime.planners.demo.DemoPlanner`
with ``detour``), so no accepted guess becomes a target either.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from planner_runtime.contract import ToolCall

# Calls that are not a tool's work: a detour never guesses for them. A demo that delegates gets no
# detour at all: a sub-agent's calls follow its delegate call, and a guess there would be the
# sub-agent's.
_NOT_GUESSED = frozenset({"finish", "ask_user", "remember", "recall"})
# Arguments that hold what the planner writes (a message, a label), not a value it looks up.
_WRITTEN = frozenset({"text", "body", "message", "content", "subject", "question", "answer", "label", "note", "description"})
_LONGEST_GUESSED = 40


def detour(calls: Sequence[ToolCall], goal: str, values: Mapping[str, Any]) -> ToolCall | None:
    """The wrong first call for a demo of ``calls`` whose goal reads ``goal`` and whose parameters
    are ``values``; None when the demo has no call that needs a looked-up value (or delegates)."""
    if any(call.name == "delegate" for call in calls):
        return None
    said = goal.casefold()
    guesses = [v for v in values.values() if isinstance(v, str) and v.strip() and v.casefold() in said]
    for call in calls[1:]:  # the first call has nothing before it to look a value up
        if call.name in _NOT_GUESSED:
            continue
        for name, value in call.arguments.items():
            if (name in _WRITTEN or not isinstance(value, str) or not value.strip() or len(value) > _LONGEST_GUESSED
                    or value.casefold() in said):
                continue
            guess = next((g for g in guesses if g.casefold() != value.casefold() and g.casefold() not in value.casefold()), None)
            if guess is not None:
                return ToolCall(name=call.name, arguments={**call.arguments, name: guess})
    return None
