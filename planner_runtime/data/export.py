"""Export trajectories as SFT data: TRL's conversational prompt-completion JSONL.

Each planner turn whose feedback was ``ok`` becomes one row: the prompt is the conversation as
the model saw it (system prompt with the tool signatures, earlier turns and tool responses, as
:func:`~planner_runtime.planners.chat_template.chat_turns` gives them to the local planner too)
and the completion is the model's raw output. Turns that drew an error are never a completion — that is the per-turn loss mask —
but they stay in later prompts, so a model also learns to recover from a mistake.
TRL's ``SFTTrainer`` trains on completions only for this format by default.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from planner_runtime.contract import FeedbackStatus, Step, Trajectory
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.planners.chat_template import chat_turns
from planner_runtime.trajectories.store import TrajectoryStore


class ExportError(PlannerRuntimeError):
    """The output file cannot be written (a missing folder, no permission, a full disk)."""


@dataclass(frozen=True)
class ExportStats:
    trajectories: int
    rows: int
    masked_turns: int


def _trained(step: Step) -> bool:
    return step.tool_call is not None and step.feedback.status is FeedbackStatus.ok


def sft_rows(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
    for i, step in enumerate(trajectory.steps):
        if not _trained(step):
            continue
        yield {
            # the turns the local planner renders (chat_turns): the model's chat template gives the same text
            "prompt": [turn.as_dict() for turn in chat_turns(trajectory.messages_at(i), trajectory.tools)],
            "completion": [{"role": "assistant", "content": step.raw_output}],
            "trajectory_id": trajectory.id,
            "step": step.index,
            "task_id": trajectory.task_id or "",
        }


def export_sft(store: TrajectoryStore, out: Path, *, only_success: bool = True, task_id: str | None = None) -> ExportStats:
    """Write SFT rows for the selected trajectories to ``out`` (JSONL); verified successes by default.

    The rows go to ``out.part`` first and replace ``out`` at the end, so a failed export never
    leaves half a file where a complete one was; :class:`ExportError` when it cannot be written."""
    n_traj = n_rows = n_masked = 0
    tmp = out.with_suffix(out.suffix + ".part")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for traj_id in store.ids(task_id=task_id, success=True if only_success else None):
                trajectory = store.get(traj_id)
                n_traj += 1
                n_masked += sum(not _trained(s) for s in trajectory.steps)
                for row in sft_rows(trajectory):
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    n_rows += 1
        tmp.replace(out)
    except OSError as exc:
        with contextlib.suppress(OSError):  # there may be no .part to remove (no such folder)
            tmp.unlink()
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return ExportStats(trajectories=n_traj, rows=n_rows, masked_turns=n_masked)
