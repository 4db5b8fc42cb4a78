"""Export trajectories as SFT data: TRL's conversational prompt-completion JSONL.

Each planner turn whose feedback was ``ok`` becomes one row: the prompt is the conversation as
the model saw it (system prompt with the tool signatures, earlier turns and tool responses
rendered exactly as the local planner renders them) and the completion is the model's raw
output. Turns that drew an error are never a completion — that is the per-turn loss mask —
but they stay in later prompts, so a model also learns to recover from a mistake.
TRL's ``SFTTrainer`` trains on completions only for this format by default.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from planner_runtime.contract import FeedbackStatus, Message, Role, Step, Trajectory
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.planners.chat_template import DEFAULT_SYSTEM, system_with_tools
from planner_runtime.trajectories.store import TrajectoryStore


class ExportError(PlannerRuntimeError):
    """The output file cannot be written (a missing folder, no permission, a full disk)."""


@dataclass(frozen=True)
class ExportStats:
    trajectories: int
    rows: int
    masked_turns: int


def _chat(messages: Iterable[Message], trajectory: Trajectory) -> list[dict[str, str]]:
    """Messages as role/content dicts, with tools in the system turn and tool results as
    ``<tool_response>`` user turns (the same text the local planner renders)."""
    out: list[dict[str, str]] = []
    rest = list(messages)
    system = rest.pop(0).content if rest and rest[0].role == Role.system else DEFAULT_SYSTEM
    out.append({"role": "system", "content": system_with_tools(system, trajectory.tools)})
    for msg in rest:
        if msg.role == Role.tool:
            body = f"<tool_response>\n{msg.content}\n</tool_response>"
            if out[-1]["role"] == "user" and out[-1]["content"].endswith("</tool_response>"):
                out[-1]["content"] += "\n" + body  # consecutive results share one user turn
            else:
                out.append({"role": "user", "content": body})
        else:
            out.append({"role": msg.role.value, "content": msg.content})
    return out


def _trained(step: Step) -> bool:
    return step.tool_call is not None and step.feedback.status is FeedbackStatus.ok


def sft_rows(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
    for i, step in enumerate(trajectory.steps):
        if not _trained(step):
            continue
        yield {
            "prompt": _chat(trajectory.messages_at(i), trajectory),
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
