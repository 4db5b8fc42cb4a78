"""A built dataset on disk: ``dataset.jsonl`` (one drawn trajectory a line) and ``manifest.json``,
read back and checked before anything trains on it.

A dataset names trajectories of one store by id; :func:`fingerprint` digests what those
trajectories are (id, start time, steps, status, verdict), so a dataset is refused by a store
that does not hold the same trajectories, whatever the store file is called or wherever it lies.
Both files are hostile input when read: a line that is not a row, a row that is not of the
store the manifest names, or a file whose digest is not the manifest's is refused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from planner_runtime.contract import Trajectory
from planner_runtime.errors import PlannerRuntimeError

DATASET_FILE = "dataset.jsonl"
MANIFEST_FILE = "manifest.json"


class DatasetError(PlannerRuntimeError):
    """A dataset folder cannot be built, written or read as it is."""


def fingerprint(trajectories: Iterable[Trajectory]) -> str:
    """A digest of what the given trajectories are, in id order (each counted once)."""
    seen = {t.id: t for t in trajectories}
    digest = hashlib.sha256()
    for tid in sorted(seen):
        t = seen[tid]
        success = t.verdict.success if t.verdict is not None else None
        digest.update(json.dumps([t.id, t.task_id, t.started_at.isoformat(), len(t.steps), t.status.value, success],
                                 separators=(",", ":")).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class DatasetRow:
    """One drawn trajectory: its id, task, weight and buckets (dimension, bucket)."""

    trajectory_id: str
    task_id: str | None
    weight: float
    buckets: tuple[tuple[str, str], ...]
    pending_review: bool

    def to_json(self, store_fingerprint: str) -> dict[str, Any]:
        return {"store_fingerprint": store_fingerprint, "trajectory_id": self.trajectory_id, "task_id": self.task_id,
                "weight": self.weight, "buckets": dict(self.buckets), "pending_review": self.pending_review}


@dataclass(frozen=True)
class BuiltDataset:
    """A dataset folder as read: its rows in draw order and its manifest."""

    path: Path
    rows: tuple[DatasetRow, ...]
    manifest: dict[str, Any]

    @property
    def store_fingerprint(self) -> str:
        return str(self.manifest["store"]["fingerprint"])

    @property
    def sha256(self) -> str:
        return str(self.manifest["dataset_sha256"])

    @property
    def recipe_name(self) -> str:
        return str(self.manifest["recipe"]["name"])

    @property
    def recipe_sha256(self) -> str:
        return str(self.manifest["recipe"]["sha256"])


def dump_line(obj: Any) -> str:
    """The one JSON form both files are written in (sorted keys, no spaces): byte-stable."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_dataset(folder: Path) -> BuiltDataset:
    """The dataset in ``folder``, checked: its manifest, every row, and the rows' digest."""
    data_path, manifest_path = folder / DATASET_FILE, folder / MANIFEST_FILE
    if not folder.is_dir():
        raise DatasetError(f"no dataset folder {folder}: build one with `planner-agent data build`")
    try:
        raw = data_path.read_bytes()
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(f"{folder} is no dataset: {Path(exc.filename).name} is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{manifest_path}: not a dataset manifest ({exc})") from None
    try:
        expected = str(manifest["dataset_sha256"])
        store = str(manifest["store"]["fingerprint"])
        str(manifest["recipe"]["name"]), str(manifest["recipe"]["sha256"])
    except (KeyError, TypeError):
        raise DatasetError(f"{manifest_path}: not a dataset manifest (it needs dataset_sha256, store and recipe)") from None
    if hashlib.sha256(raw).hexdigest() != expected:
        raise DatasetError(f"{data_path} was changed after it was built (its sha256 is not the manifest's): build it again")
    rows = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            if row["store_fingerprint"] != store:
                raise DatasetError(f"{data_path}:{number}: a row of another store than the manifest's")
            rows.append(DatasetRow(trajectory_id=str(row["trajectory_id"]), task_id=row.get("task_id"),
                                   weight=float(row["weight"]), buckets=tuple(sorted(row["buckets"].items())),
                                   pending_review=bool(row.get("pending_review", False))))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise DatasetError(f"{data_path}:{number}: not a dataset row") from None
    return BuiltDataset(path=folder, rows=tuple(rows), manifest=manifest)
