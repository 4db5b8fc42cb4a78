"""SFT data: one multi-turn sequence per trajectory, token for token what the local planner read
and wrote, with loss only on assistant turns whose feedback was ok; the store's filters choose."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from planner_runtime.planners.chat_template import IM_END
from planner_runtime.training import data
from tests.planner_runtime.training.recorded import GOOD, record


def _trained_text(tokenizer, seq: data.TrainingSequence) -> list[str]:  # noqa: ANN001
    """The decoded runs of trained tokens, one per trained turn."""
    runs, current = [], []
    for token, bit in zip(seq.input_ids, seq.assistant_masks):
        if bit:
            current.append(token)
        elif current:
            runs.append(tokenizer.decode(current))
            current = []
    return runs + ([tokenizer.decode(current)] if current else [])


def test_a_trajectory_is_one_sequence_and_only_its_ok_assistant_turns_train(episodes, tokenizer):
    good, _ = episodes
    (seq,) = data.sequences(good, tokenizer)
    assert len(seq.input_ids) == len(seq.assistant_masks)
    # the whole conversation, every turn once: the text the last step's conversation renders
    assert tokenizer.decode(seq.input_ids) == data.full_text(good)
    trained = _trained_text(tokenizer, seq)
    # three assistant turns; the first drew invalid_arguments, so two are targets, each closed by <|im_end|>
    assert len(good.steps) == 3 and good.steps[0].feedback.status.value == "error"
    assert [t.endswith(IM_END) for t in trained] == [True, True]
    assert '"hour": 7' in trained[0] and '"finish"' in trained[1]
    assert all('"hour": "7"' not in t for t in trained)
    # the masked mistake and its feedback stay in the context, before the first target
    first_target = seq.assistant_masks.index(1)
    context = tokenizer.decode(seq.input_ids[:first_target])
    assert '"hour": "7"' in context and "invalid_arguments" in context
    assert sum(seq.assistant_masks) < len(seq.input_ids) / 10


def test_the_sequence_holds_each_turn_exactly_as_the_local_planner_fed_and_wrote_it(episodes, local_planner):
    """For every step, the sequence up to that assistant turn is the planner's ``encode`` of the
    step's input, and then come the prefill it forces and the rest of the answer, id for id."""
    good, _ = episodes
    tok = local_planner.tokenizer
    (seq,) = data.sequences(good, tok)
    ids = list(seq.input_ids)
    end = tok(f"{IM_END}\n", add_special_tokens=False).input_ids
    position = 0
    for i, step in enumerate(good.steps):
        prompt_ids, prefill, prefill_ids = local_planner.encode(good.messages_at(i), good.tools, 24)
        assert ids[: len(prompt_ids)] == prompt_ids, f"step {i}: the context is not what the planner read"
        assert prompt_ids[:position] == ids[:position]
        written = prefill_ids + tok(step.raw_output[len(prefill):], add_special_tokens=False).input_ids
        assert step.raw_output.startswith(prefill)
        assert ids[len(prompt_ids): len(prompt_ids) + len(written) + len(end)] == written + end
        assert seq.assistant_masks[len(prompt_ids): len(prompt_ids) + len(written)] == (int(data.trained(step)),) * len(written)
        position = len(prompt_ids) + len(written) + len(end)
    assert position == len(ids)


def test_the_filters_choose_what_trains(episodes, store, tokenizer, device, device_ref):
    good, bad = episodes
    tagged = record(store, device, device_ref, GOOD, collection="demo-1")
    ids = lambda sel: [t.id for t in data.select(store, sel)]  # noqa: E731
    assert ids(data.Selection()) == [good.id, tagged.id]  # verified successes of train templates
    assert ids(data.Selection(success=None)) == [good.id, bad.id, tagged.id]
    assert ids(data.Selection(success=False)) == [bad.id]
    assert ids(data.Selection(collection="demo-1")) == [tagged.id]
    assert ids(data.Selection(split="test")) == []  # clock.set_alarm is a train template
    assert ids(data.Selection(split="all", source="sandbox")) == [good.id, tagged.id]
    assert ids(data.Selection(source="real")) == []
    assert ids(data.Selection(since=datetime.now(timezone.utc) + timedelta(minutes=1))) == []
    assert ids(data.Selection(planner=good.planner)) == [good.id, tagged.id]
    assert ids(data.Selection(planner="local")) == []
    # a failed episode's ok turns train too when asked for
    built = data.build(data.select(store, data.Selection(success=None)), tokenizer)
    assert (built.trajectories, len(built.sequences)) == (3, 3)


def test_no_data_and_too_little_data_are_refused(episodes, store, tokenizer):
    with pytest.raises(data.NoData, match="no training data: 0 trajectories selected"):
        data.build(data.select(store, data.Selection(collection="nope")), tokenizer)
    with pytest.raises(data.NoData, match="too little training data"):
        data.build(data.select(store, data.Selection()), tokenizer, min_trained_tokens=10_000)
    with pytest.raises(data.TrainingError, match="split 'dev'"):
        data.Selection(split="dev")
