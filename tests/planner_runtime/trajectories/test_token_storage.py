"""A step's token ids (prompt, completion, logprobs, sampled mask) are stored compactly and read
back whole: the prompt of a multi-turn chat as the suffix after what the previous turn read and
answered, in a real SQLite file; and the episode keeps what its planner returned."""

from __future__ import annotations

import random
import sqlite3
from typing import Sequence

from planner_runtime.contract import (
    DeviceRef, Feedback, Message, Role, Source, Step, ToolCall, ToolSpec, Trajectory, TrajectoryStatus, TurnTokens, Usage,
)
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity

rng = random.Random(7)


def _ids(n: int) -> tuple[int, ...]:
    return tuple(rng.randrange(49152) for _ in range(n))


def _chat(turns: int, system: int = 1500, per_turn: int = 300, answer: int = 40) -> list[TurnTokens]:
    """Token records of a multi-turn chat: each prompt is the previous prompt and answer, then the
    tool response and the next turn's header."""
    records, prompt = [], _ids(system)
    for _ in range(turns):
        completion = _ids(answer)
        records.append(TurnTokens(prompt_ids=prompt, completion_ids=completion,
                                  logprobs=tuple(-rng.random() * 3 for _ in completion),
                                  sampled=tuple(rng.random() < 0.7 for _ in completion), tokenizer="SmolLM2-135M-Instruct"))
        prompt = prompt + completion + _ids(per_turn)
    return records


def _step(index: int, tokens: TurnTokens | None) -> Step:
    call = ToolCall(name="read_screen")
    return Step(index=index, messages=(Message(role=Role.user, content=f"turn {index}"),), messages_new=index > 0,
                raw_output="<tool_call>{}</tool_call>", tool_call=call, feedback=Feedback.ok(call.call_id), tokens=tokens)


def _store(path, records: Sequence[TurnTokens | None]) -> str:
    traj = Trajectory(goal="g", source=Source.sandbox, device=DeviceRef(serial="emulator-5554"), planner="local")
    with TrajectoryStore(path) as store:
        store.begin(traj)
        for i, tokens in enumerate(records):
            store.append_step(traj.id, _step(i, tokens))
        store.end(traj.id, TrajectoryStatus.finished, answer="", usage=Usage())
    return traj.id


def test_token_ids_read_back_exactly_and_the_prompt_is_stored_once(tmp_path):
    records = _chat(10)
    traj_id = _store(tmp_path / "t.sqlite", records)
    with TrajectoryStore(tmp_path / "t.sqlite", create=False) as store:
        assert [s.tokens for s in store.get(traj_id).steps] == records  # ids, logprobs (exact floats), mask, tokenizer
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        stored = sum(n for (n,) in db.execute("SELECT length(tokens) FROM steps"))
        in_records = sum(n for (n,) in db.execute("SELECT length(record) FROM steps"))
    whole_prompts = sum(len(r.prompt_ids) for r in records)
    new_ids = records[-1].prompt_ids + records[-1].completion_ids  # every id of the chat, once
    # 4 bytes an id, each id once, plus 9 bytes a completion token for its logprob and mask
    assert stored < 4 * len(new_ids) + 9 * sum(len(r.completion_ids) for r in records) + 64 * len(records)
    assert stored < whole_prompts  # under a byte per id of the whole prompts (bare uint32 would be 4)
    assert in_records < 2000 * len(records)  # the ids are not in the JSON as well


def test_a_prompt_that_does_not_extend_the_last_turn_or_a_turn_without_tokens_still_reads_back(tmp_path):
    a, b, c = _chat(3)
    rewritten = TurnTokens(prompt_ids=a.prompt_ids[:100] + _ids(900), completion_ids=_ids(5), tokenizer="t")  # the history was cut
    odd = TurnTokens(prompt_ids=(2**33, -1), completion_ids=(1,))  # no uint32 holds these: kept in the JSON
    records = [a, None, b, rewritten, c, odd, TurnTokens(), b]
    traj_id = _store(tmp_path / "t.sqlite", records)
    with TrajectoryStore(tmp_path / "t.sqlite", create=False) as store:
        assert [s.tokens for s in store.get(traj_id).steps] == records


class TokenPlanner:
    """The scripted planner, returning token records the way the local planner does."""

    name = "scripted"
    release = "scripted"

    def __init__(self, script: list[dict]) -> None:
        self.inner = ScriptedPlanner(script)
        self.given: list[TurnTokens] = []

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        out = self.inner.plan(messages, tools, sampling=sampling)
        text = "".join(m.content for m in messages)
        tokens = TurnTokens(prompt_ids=tuple(text.encode()), completion_ids=tuple(out.text.encode()),
                            logprobs=tuple(-0.5 for _ in out.text.encode()), sampled=tuple(True for _ in out.text.encode()),
                            tokenizer="bytes")
        self.given.append(tokens)
        return out.model_copy(update={"tokens": tokens})


def test_the_episode_keeps_the_token_ids_its_planner_returned(device, device_ref, store):
    planner = TokenPlanner([{"name": "read_screen", "arguments": {}}, {"name": "open_app", "arguments": {"app": "Clock"}}])
    traj = run_goal("Open the clock", device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox), planner=planner, store=store)
    assert len(traj.steps) == 3
    assert [s.tokens for s in store.get(traj.id).steps] == planner.given
