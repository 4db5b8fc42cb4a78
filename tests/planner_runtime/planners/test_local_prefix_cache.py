"""Episodes sharing one local planner each keep their own prompt prefix, and answers do not change."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Message, Role
from planner_runtime.planners.local.planner import LocalPlanner

GOALS = ("Wake me up at 7:30 tomorrow.", "Text 555-0100 that I am running late.")


def _chat(goal: str) -> list[Message]:
    return [
        Message(role=Role.system, content="You operate an Android phone for the user."),
        Message(role=Role.user, content=goal),
    ]


def _next_turn(chat: list[Message], answer: str, turn: int) -> list[Message]:
    result = f'{{"status": "ok", "turn": {turn}}}'
    return [*chat, Message(role=Role.assistant, content=answer), Message(role=Role.tool, content=result)]


def _alternate(planner: LocalPlanner, tools, turns: int) -> tuple[list[list[str]], list[tuple[int, int]]]:
    """Two episodes, turn by turn in alternation (A, B, A, B, ...): their answers, and for each call
    after the first turn (tokens taken from the cache, tokens of the episode's previous prompt)."""
    chats = [_chat(goal) for goal in GOALS]
    answers: list[list[str]] = [[], []]
    previous = [0, 0]
    reuse: list[tuple[int, int]] = []
    for turn in range(turns):
        for e in range(2):
            out = planner.plan(chats[e], tools)
            if turn:
                reuse.append((planner.last_reused_tokens, previous[e]))
            previous[e] = out.usage.prompt_tokens
            answers[e].append(out.text)
            chats[e] = _next_turn(chats[e], out.text, turn)
    return answers, reuse


@pytest.mark.slow
def test_alternating_episodes_each_reuse_their_own_history(model_cache, two_tools):
    shared = LocalPlanner(cache_dir=model_cache, max_new_tokens=16).load()
    answers, reuse = _alternate(shared, two_tools, turns=3)
    # every call followed the other episode's, and still only its new turn was computed
    assert all(kept >= prompt - 4 for kept, prompt in reuse), reuse
    shared.reuse_prefix_cache = False  # the same model, every prompt computed from scratch
    uncached, none_kept = _alternate(shared, two_tools, turns=3)
    assert all(kept == 0 for kept, _ in none_kept)
    assert uncached == answers  # greedy: the kept prefixes change no answer
