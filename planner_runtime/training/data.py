"""SFT data: which stored trajectories train, and each one as a single tokenized multi-turn sequence.

A trajectory becomes ONE sequence: every turn as the local planner renders it
(:func:`~planner_runtime.planners.chat_template.chat_turns`, the one rendering, with the tools
written the way the release will be told to write them), tokenized turn by turn. ChatML's ``<|im_start|>``/``<|im_end|>`` are special tokens the tokenizer splits on first, so
tokenizing turn by turn gives the same ids as tokenizing the whole text, which is what the planner
does with each step's prompt: the sequence up to an assistant turn's header is, token for token,
that step's model input. The mask (``assistant_masks``, which TRL's ``SFTTrainer`` turns into
labels) is 1 on an assistant turn's content and its ``<|im_end|>`` when the turn's feedback was
``ok``, and 0 everywhere else: prompts, tool responses, and turns that drew an error, which stay
in the context so recovery is learned but are never a target.

A step whose input does not extend the previous turn (a record holding a rewritten input) starts
a new sequence, since no single sequence is then what the model read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from planner_runtime.contract import DataSource, FeedbackStatus, Step, Trajectory
from planner_runtime.data.dataset import BuiltDataset, DatasetError, fingerprint, read_dataset
from planner_runtime.data.review.labels import FinalLabel, final_labels
from planner_runtime.errors import StoreError
from planner_runtime.planners.chat_template import IM_END, IM_START, ChatTurn, chat_turns, render_conversation
from planner_runtime.planners.renderings import DEFAULT
from planner_runtime.tasks.splits import split_of, template_splits
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training import TrainingError

SPLITS = ("train", "test", "all")


class NoData(TrainingError):
    """The selection holds no trajectory with a turn to train on (or too few tokens to train)."""


@dataclass(frozen=True)
class Selection:
    """Which stored trajectories train: verified successes by default. ``split`` is the task
    template's (a task's own ``split``, else the suite's stable draw); ``since`` is inclusive."""

    source: str | None = None
    data_source: str | None = None  # demo, teacher or self (contract.DataSource)
    split: str = "train"
    success: bool | None = True
    collection: str | None = None
    since: datetime | None = None
    planner: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise TrainingError(f"split {self.split!r}: choose train, test or all")
        if self.data_source is not None and self.data_source not in {d.value for d in DataSource}:
            raise TrainingError(f"data source {self.data_source!r}: choose {', '.join(d.value for d in DataSource)}")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["since"] = self.since.isoformat() if self.since else None
        return out


@dataclass(frozen=True)
class TrainingSequence:
    """One training sequence: token ids and the 0/1 loss mask over them."""

    trajectory_id: str
    input_ids: tuple[int, ...]
    assistant_masks: tuple[int, ...]


def select(store: TrajectoryStore, selection: Selection) -> list[Trajectory]:
    """The selected trajectories, oldest first; only top-level episodes (a sub-agent's
    conversation is its own trajectory and is selected by its own verdict, which it has none of).
    The review queue's word is honoured: a rejected trajectory is never selected, and a
    relabelled one is selected by the reviewers' success instead of the verifier's."""
    known = template_splits()
    with store.engine.connect() as conn:
        labels = final_labels(conn)
    where = dict(source=selection.source, data_source=selection.data_source, collection=selection.collection,
                 since=selection.since, planner=selection.planner, task_id=selection.task_id, infra=False)
    # the verifier's successes as the store filters them, so the rest are never loaded
    verified = set(store.ids(success=selection.success, **where)) if selection.success is not None else None
    chosen = []
    for trajectory_id in store.ids(**where):
        label = labels.get(trajectory_id)
        if label is not None and label.excluded:
            continue
        if verified is not None and trajectory_id not in verified and (label is None or label.success is None):
            continue
        trajectory = store.get(trajectory_id)
        if trajectory.parent is not None:
            continue
        if selection.success is not None and labelled_success(trajectory, label) is not selection.success:
            continue
        if selection.split != "all" and split_of(trajectory.task_id, known) != selection.split:
            continue
        chosen.append(trajectory)
    return chosen


def labelled_success(trajectory: Trajectory, label: FinalLabel | None) -> bool | None:
    """The success a trajectory trains with: a relabel's, else its verdict's (``None``: unverified)."""
    if label is not None and label.success is not None:
        return label.success
    return trajectory.verdict.success if trajectory.verdict is not None else None


def from_dataset(store: TrajectoryStore, folder: Path) -> tuple[list[Trajectory], BuiltDataset]:
    """The trajectories of the dataset built in ``folder`` (``planner-agent data build``), in its
    order (a row drawn twice trains twice), read from ``store``; refused when ``store`` does not
    hold the very trajectories it was built from, or a reviewer rejected one since."""
    try:
        built = read_dataset(folder)
    except DatasetError as exc:
        raise TrainingError(str(exc)) from None
    ids = list(dict.fromkeys(r.trajectory_id for r in built.rows))
    with store.engine.connect() as conn:
        labels = final_labels(conn)
    loaded: dict[str, Trajectory] = {}
    for tid in ids:
        try:
            loaded[tid] = store.get(tid)
        except StoreError:
            raise TrainingError(f"dataset {folder} was built from another store: {store.path} has no trajectory {tid}") from None
    if fingerprint(loaded.values()) != built.store_fingerprint:
        raise TrainingError(f"dataset {folder} was built from another store (fingerprint {built.store_fingerprint[:12]}, "
                            f"{store.path} gives {fingerprint(loaded.values())[:12]}): build it again from this store")
    rejected = [tid for tid in ids if tid in labels and labels[tid].excluded]
    if rejected:
        raise TrainingError(f"dataset {folder}: {len(rejected)} of its trajectories were rejected in review since it was built "
                            f"(first {rejected[0]}): build it again")
    return [loaded[r.trajectory_id] for r in built.rows], built


def trained(step: Step) -> bool:
    """Whether a turn is a target: the model's output parsed into a call the harness accepted."""
    return step.tool_call is not None and step.feedback.status is FeedbackStatus.ok


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False).input_ids


def sequences(trajectory: Trajectory, tokenizer: Any, rendering: str = DEFAULT) -> list[TrainingSequence]:
    """``trajectory`` as training sequences (one, unless a step's input was rewritten), its tools
    written the way ``rendering`` writes them; a sequence with no trained turn is left out."""
    out: list[TrainingSequence] = []
    turns: list[ChatTurn] = []  # the current sequence's turns so far, assistant turns included
    ids: list[int] = []
    mask: list[int] = []

    def flush() -> None:
        if any(mask):
            out.append(TrainingSequence(trajectory.id, tuple(ids), tuple(mask)))

    for i, step in enumerate(trajectory.steps):
        prompt = chat_turns(trajectory.messages_at(i), trajectory.tools, rendering)
        if prompt[: len(turns)] != turns:
            flush()
            turns, ids, mask = [], [], []
        for turn in prompt[len(turns):]:
            piece = _ids(tokenizer, turn.render())
            ids += piece
            mask += [0] * len(piece)
        turns = prompt + [ChatTurn("assistant", step.raw_output)]
        header, body, tail = _ids(tokenizer, f"{IM_START}assistant\n"), _ids(tokenizer, step.raw_output + IM_END), _ids(tokenizer, "\n")
        ids += header + body + tail
        mask += [0] * len(header) + [int(trained(step))] * len(body) + [0] * len(tail)
    flush()
    return out


def full_text(trajectory: Trajectory, rendering: str = DEFAULT) -> str:
    """The whole text of a single-sequence trajectory: its last step's conversation."""
    last = len(trajectory.steps) - 1
    return render_conversation(trajectory.messages_at(last), trajectory.tools, trajectory.steps[last].raw_output, rendering)


@dataclass(frozen=True)
class SftData:
    """Tokenized SFT data and what a release records about it."""

    sequences: tuple[TrainingSequence, ...]
    trajectories: int
    masked_turns: int

    @property
    def tokens(self) -> int:
        return sum(len(s.input_ids) for s in self.sequences)

    @property
    def trained_tokens(self) -> int:
        return sum(sum(s.assistant_masks) for s in self.sequences)

    def sha256(self) -> str:
        """A digest of exactly what trains: every sequence's ids and mask, in order."""
        digest = hashlib.sha256()
        for s in self.sequences:
            digest.update(json.dumps([s.input_ids, s.assistant_masks], separators=(",", ":")).encode())
        return digest.hexdigest()

    def rows(self, max_length: int | None = None) -> list[dict[str, list[int]]]:
        """The rows SFTTrainer takes as a pre-tokenized dataset; a sequence longer than
        ``max_length`` keeps its end (the later turns, which hold most of the targets)."""
        cut = slice(-max_length, None) if max_length else slice(None)
        return [{"input_ids": list(s.input_ids[cut]), "assistant_masks": list(s.assistant_masks[cut])} for s in self.sequences]


def build(trajectories: Iterable[Trajectory], tokenizer: Any, *, min_trained_tokens: int = 1,
          rendering: str = DEFAULT) -> SftData:
    """Tokenize ``trajectories``; :class:`NoData` when nothing (or too little) would train."""
    chosen: Sequence[Trajectory] = list(trajectories)
    seqs = tuple(s for t in chosen for s in sequences(t, tokenizer, rendering))
    data = SftData(sequences=seqs, trajectories=len({s.trajectory_id for s in seqs}),
                    masked_turns=sum(not trained(step) for t in chosen for step in t.steps))
    if not seqs:
        raise NoData(f"no training data: {len(chosen)} trajectories selected, none with a turn to train on")
    if data.trained_tokens < min_trained_tokens:
        raise NoData(f"too little training data: {data.trained_tokens} trained tokens in {len(seqs)} sequences "
                     f"(at least {min_trained_tokens} needed)")
    return data
