"""An episode's turns become one prompt and one masked completion; unscorable episodes carry no signal."""

from __future__ import annotations

from planner_runtime.contract import (
    Check, DeviceRef, ErrorCode, FailureKind, Feedback, FeedbackStatus, Source, Step, ToolCall, ToolError,
    Trajectory, TrajectoryStatus, TurnTokens, Verdict,
)
from planner_runtime.training.rollout import episode_sequence

EOS = 2


def _step(i: int, prompt: list[int], completion: list[int], sampled: list[bool], *, blocked: bool = False) -> Step:
    call = ToolCall(name="pay" if blocked else "tap", arguments={})
    feedback = (Feedback(call_id=call.call_id, status=FeedbackStatus.blocked,
                         error=ToolError(code=ErrorCode.unsafe_action, hint="pay was not run: denied"))
                if blocked else Feedback.ok(call.call_id))
    tokens = TurnTokens(prompt_ids=tuple(prompt), completion_ids=tuple(completion),
                        logprobs=tuple(-0.5 if s else 0.0 for s in sampled), sampled=tuple(sampled), tokenizer="t")
    return Step(index=i, messages=(), raw_output="", tool_call=call, feedback=feedback, tokens=tokens)


def _traj(steps: list[Step], *, success: bool = True, score: float = 1.0, status=TrajectoryStatus.finished,
          kind: FailureKind | None = None) -> Trajectory:
    verdict = Verdict(success=success, score=score, checks=(Check(name="c", passed=success),), failure_kind=kind)
    return Trajectory(goal="g", source=Source.sandbox, device=DeviceRef(serial="s"), planner="local",
                      status=status, steps=tuple(steps), verdict=verdict)


def test_turns_join_into_one_completion_with_only_sampled_tokens_unmasked():
    first = _step(0, [10, 11, 12], [20, 21, 22], [False, True, False])
    # the next prompt is the first prompt, the answer, then the tool response (30, 31)
    second = _step(1, [10, 11, 12, 20, 21, 22, 30, 31], [23, 24], [True, True])
    seq = episode_sequence(_traj([first, second], score=1.0), EOS)
    assert seq.prompt_ids == (10, 11, 12)
    assert seq.completion_ids == (20, 21, 22, 30, 31, 23, 24)
    assert seq.env_mask == (0, 1, 0, 0, 0, 1, 1)
    assert seq.logprobs == (0.0, -0.5, 0.0, 0.0, 0.0, -0.5, -0.5)
    assert seq.sampled_tokens == 3 and seq.cut_at is None
    assert seq.outcome is not None and seq.outcome.success and seq.outcome.steps == 2
    assert seq.outcome.output_tokens == 5


def test_a_prompt_that_does_not_extend_the_turn_before_cuts_the_sequence_there():
    first = _step(0, [10, 11], [20, 21], [True, True])
    second = _step(1, [10, 99, 20, 21, 30], [23], [True])  # re-rendered differently
    seq = episode_sequence(_traj([first, second]), EOS)
    assert seq.cut_at == 1
    assert seq.completion_ids == (20, 21) and seq.env_mask == (1, 1)


def test_infra_interrupted_and_spec_episodes_are_never_scored():
    steps = [_step(0, [1], [2], [True])]
    for traj in (_traj(steps, status=TrajectoryStatus.infra_error), _traj(steps, status=TrajectoryStatus.interrupted),
                 _traj(steps, success=False, score=0.0, kind=FailureKind.infra),
                 _traj(steps, success=False, score=0.0, kind=FailureKind.spec)):
        seq = episode_sequence(traj, EOS)
        assert seq.outcome is None and seq.reason
        assert seq.env_mask == (0,)  # nothing in it trains


def test_an_episode_without_token_records_is_not_scored():
    call = ToolCall(name="tap")
    step = Step(index=0, messages=(), raw_output="", tool_call=call, feedback=Feedback.ok(call.call_id))
    seq = episode_sequence(_traj([step]), EOS)
    assert seq.outcome is None and "token record" in seq.reason


def test_an_attempted_unconfirmed_sensitive_action_fails_the_episode_with_a_reason():
    steps = [_step(0, [1, 2], [3], [True], blocked=True), _step(1, [1, 2, 3, 4], [5], [True])]
    # even a verifier that passed (the task did not check the payment) gives no reward
    seq = episode_sequence(_traj(steps, success=True, score=1.0), EOS)
    assert seq.outcome is not None and not seq.outcome.success and seq.outcome.progress == 0.0
    assert "attempted pay without confirmation" in seq.reason


def test_an_episode_from_a_device_host_reads_back_as_the_same_sequence(tmp_path):
    """``train rl --ray``: a host sends its episode as JSON and the trainer's store takes it whole;
    the token records must come through, or the sequence is unscored."""
    from planner_runtime.trajectories.store import TrajectoryStore

    first = _step(0, [10, 11, 12], [20, 21, 22], [False, True, False])
    second = _step(1, [10, 11, 12, 20, 21, 22, 30, 31], [23, 24], [True, True])
    sent = _traj([first, second], score=1.0)
    with TrajectoryStore(tmp_path / "t.sqlite", create=True) as store:
        assert store.add_finished(Trajectory.from_json(sent.to_json()))
        stored = store.get(sent.id)
    assert [s.tokens for s in stored.steps] == [first.tokens, second.tokens]
    assert episode_sequence(stored, EOS) == episode_sequence(sent, EOS) and episode_sequence(stored, EOS).outcome is not None
