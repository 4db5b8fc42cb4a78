"""Drawing a dataset from a trajectory store as a recipe says: :func:`explain` (what it would
draw) and :func:`build` (``dataset.jsonl`` and ``manifest.json``).

Candidates are the store's top-level episodes the recipe's ``select`` matches (the task
template's split, collections, since, verified success or failure), never an infra failure.
The review queue's final labels are honoured (:mod:`planner_runtime.data.review.labels`): a
rejected trajectory never enters, a relabelled one counts with the reviewers' success (a
verified failure relabelled a success can enter, a success relabelled a failure leaves), and a
trajectory still waiting for review is included but counted apart in the manifest.

A candidate's weight is the product of its buckets' weights; weight 0 drops it. Identical call
sequences (tool names and arguments) of one task instance count once (the oldest stays). The
draw is weighted sampling without replacement (Efraimidis–Spirakis: each candidate's key is
``log(u) / weight`` with ``u`` drawn from the seed and its own id, so a trajectory added to the
store never reshuffles the others), taking keys in order and skipping a template that reached
its cap; with ``allow_repeats`` it draws with replacement from a seeded generator, a template
leaving the pool once it reached its cap. Same recipe and same store content: the same bytes.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
import random
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from planner_runtime.contract import DataSource, Trajectory
from planner_runtime.data.dataset import DATASET_FILE, MANIFEST_FILE, DatasetError, DatasetRow, dump_line, fingerprint
from planner_runtime.data.recipe import DIMENSIONS, Recipe, calls_bucket
from planner_runtime.data.review.labels import FinalLabel, final_labels, pending
from planner_runtime.tasks.spec import TaskSpec, builtin_suite
from planner_runtime.tasks.splits import split_of, template_splits
from planner_runtime.trajectories.store import TrajectoryStore

UNKNOWN = "unknown"  # the bucket of a trajectory whose task (or data source) is not known
EXCLUDED = ("review_rejected", "review_relabelled_out", "weight_zero", "dedup", "cap")


@dataclass(frozen=True)
class Candidate:
    """A trajectory the recipe's ``select`` matches, with what the draw needs of it."""

    trajectory: Trajectory
    template: str | None
    buckets: tuple[tuple[str, str], ...]
    weight: float
    pending_review: bool
    relabelled: bool


@dataclass(frozen=True)
class Draw:
    """What a recipe draws from a store: the rows in draw order and every count behind them."""

    recipe: Recipe
    store_fingerprint: str
    rows: tuple[DatasetRow, ...]
    candidates: int
    excluded: tuple[tuple[str, int], ...]  # (reason, how many) in EXCLUDED order
    relabelled_in: int  # candidates that are one only because reviewers relabelled them
    pending: tuple[int, int]  # (candidates, drawn rows) still waiting on a reviewer
    buckets: tuple[tuple[str, tuple[tuple[str, int, int], ...]], ...]  # (dimension, ((bucket, candidates, drawn), ...))

    def counts(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "drawn": len(self.rows),
            "distinct": len({r.trajectory_id for r in self.rows}),
            "excluded": dict(self.excluded),
            "relabelled_in": self.relabelled_in,
            "pending_review": {"candidates": self.pending[0], "drawn": self.pending[1]},
            "buckets": {dim: {b: {"candidates": c, "drawn": d} for b, c, d in rows} for dim, rows in self.buckets},
        }

    def to_json(self) -> dict[str, Any]:
        """The manifest, less the digest of the written rows (``build`` adds it)."""
        return {
            "recipe": {"name": self.recipe.name, "file": Path(self.recipe.path).name, "sha256": self.recipe.sha256,
                       "text": self.recipe.text, "parsed": self.recipe.to_json()},
            "store": {"fingerprint": self.store_fingerprint},
            "size": self.recipe.size,
            "counts": self.counts(),
            "notes": ["pending_review counts trajectories still waiting on a reviewer: they are included as the verifier judged them",
                      "excluded counts are candidates kept out, in order: review, weight 0, dedup, cap"],
        }


def _task_index() -> dict[str, TaskSpec]:
    index: dict[str, TaskSpec] = {}
    for task in builtin_suite().tasks:
        index.setdefault(task.template, task)
    return index


def _buckets(trajectory: Trajectory, task: TaskSpec | None) -> tuple[tuple[str, str], ...]:
    data_source = trajectory.data_source or DataSource.of_planner(trajectory.planner)
    found = {
        "category": task.category.value if task else UNKNOWN,
        "difficulty": task.difficulty if task else UNKNOWN,
        "source": trajectory.source.value,
        "data_source": data_source.value if data_source else UNKNOWN,
        "domain": task.domain if task else UNKNOWN,
        "calls": calls_bucket(sum(1 for s in trajectory.steps if s.tool_call is not None and s.tool_call.name != "finish")),
    }
    return tuple((dim, found[dim]) for dim in DIMENSIONS)


def _success(trajectory: Trajectory, label: FinalLabel | None) -> bool | None:
    if label is not None and label.success is not None:
        return label.success
    return trajectory.verdict.success if trajectory.verdict is not None else None


def _matching_ids(store: TrajectoryStore, recipe: Recipe) -> list[str]:
    since = recipe.select.since
    ids = list(store.ids(infra=False, since=since))
    if recipe.select.collections:
        wanted = {i for c in recipe.select.collections for i in store.ids(collection=c, infra=False, since=since)}
        ids = [i for i in ids if i in wanted]
    return ids


def _candidates(store: TrajectoryStore, recipe: Recipe, excluded: Counter[str]) -> list[Candidate]:
    """The trajectories ``select`` matches, review honoured, oldest first; counts what review kept out."""
    with store.engine.connect() as conn:
        labels, waiting = final_labels(conn), pending(conn)
    known, tasks, want = template_splits(), _task_index(), recipe.select.success
    verified = set(store.ids(success=want, infra=False, since=recipe.select.since))
    found = []
    for tid in _matching_ids(store, recipe):
        label = labels.get(tid)
        if tid not in verified and (label is None or label.success is None):
            continue  # neither the verifier nor a reviewer says it is what the recipe selects
        trajectory = store.get(tid)
        if trajectory.parent is not None:
            continue  # a sub-agent's conversation: part of its parent's episode
        if recipe.select.split != "all" and split_of(trajectory.task_id, known) != recipe.select.split:
            continue
        if label is not None and label.excluded:
            excluded["review_rejected"] += 1
            continue
        if _success(trajectory, label) is not want:
            excluded["review_relabelled_out"] += 1
            continue
        template = trajectory.task_id.split("@", 1)[0] if trajectory.task_id else None
        buckets = _buckets(trajectory, tasks.get(template) if template else None)
        weight = math.prod(recipe.weight(dim, bucket) for dim, bucket in buckets)
        found.append(Candidate(trajectory, template, buckets, weight, tid in waiting,
                               relabelled=tid not in verified))
    return found


def _calls(trajectory: Trajectory) -> str:
    return json.dumps([[s.tool_call.name, s.tool_call.arguments] for s in trajectory.steps if s.tool_call is not None],
                      sort_keys=True, separators=(",", ":"))


def _dedup(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per (task instance, call sequence): the oldest."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for c in candidates:
        if c.trajectory.task_id is not None:
            key = (c.trajectory.task_id, _calls(c.trajectory))
            if key in seen:
                continue
            seen.add(key)
        kept.append(c)
    return kept


def _key(seed: int, candidate: Candidate) -> float:
    u = 1.0 - random.Random(f"{seed}:{candidate.trajectory.id}").random()  # in (0, 1]
    return math.log(u) / candidate.weight


def _draw_without(pool: list[Candidate], recipe: Recipe) -> list[Candidate]:
    order = sorted(pool, key=lambda c: (-_key(recipe.seed, c), c.trajectory.id))
    taken: Counter[str | None] = Counter()
    drawn = []
    for c in order:
        if len(drawn) == recipe.size:
            break
        if recipe.per_task is not None and c.template is not None and taken[c.template] >= recipe.per_task:
            continue
        taken[c.template] += 1
        drawn.append(c)
    return drawn


def _draw_with(pool: list[Candidate], recipe: Recipe) -> list[Candidate]:
    rng = random.Random(recipe.seed)
    pool = sorted(pool, key=lambda c: c.trajectory.id)
    taken: Counter[str | None] = Counter()
    drawn: list[Candidate] = []
    while pool and len(drawn) < recipe.size:
        totals = list(accumulate(c.weight for c in pool))
        c = pool[min(bisect.bisect_right(totals, rng.random() * totals[-1]), len(pool) - 1)]
        drawn.append(c)
        taken[c.template] += 1
        if recipe.per_task is not None and c.template is not None and taken[c.template] >= recipe.per_task:
            pool = [p for p in pool if p.template != c.template]
    return drawn


def explain(recipe: Recipe, store: TrajectoryStore) -> Draw:
    """What ``recipe`` draws from ``store``, with every count; nothing is written."""
    excluded: Counter[str] = Counter()
    candidates = _candidates(store, recipe, excluded)
    pool = [c for c in candidates if c.weight > 0]
    excluded["weight_zero"] = len(candidates) - len(pool)
    if recipe.dedup:
        kept = _dedup(pool)
        excluded["dedup"], pool = len(pool) - len(kept), kept
    drawn = (_draw_with if recipe.allow_repeats else _draw_without)(pool, recipe)
    chosen = {c.trajectory.id for c in drawn}
    full = {t for t, n in Counter(c.template for c in drawn).items() if t is not None and recipe.per_task is not None and n >= recipe.per_task}
    excluded["cap"] = sum(1 for c in pool if c.template in full and c.trajectory.id not in chosen)
    store_fp = fingerprint(c.trajectory for c in drawn)
    rows = tuple(DatasetRow(c.trajectory.id, c.trajectory.task_id, c.weight, c.buckets, c.pending_review) for c in drawn)
    per_dim = []
    for i, dim in enumerate(DIMENSIONS):
        cand = Counter(c.buckets[i][1] for c in candidates)
        got = Counter(c.buckets[i][1] for c in drawn)
        per_dim.append((dim, tuple((b, cand[b], got[b]) for b in sorted(cand))))
    return Draw(recipe=recipe, store_fingerprint=store_fp, rows=rows, candidates=len(candidates),
                excluded=tuple((r, excluded[r]) for r in EXCLUDED), relabelled_in=sum(c.relabelled for c in candidates),
                pending=(sum(c.pending_review for c in candidates), sum(r.pending_review for r in rows)), buckets=tuple(per_dim))


@dataclass(frozen=True)
class Built:
    """A written dataset: its folder, the draw, its digest, and whether it was already there."""

    path: Path
    draw: Draw
    dataset_sha256: str
    manifest: dict[str, Any]
    unchanged: bool


def build(recipe: Recipe, store: TrajectoryStore, out_dir: Path) -> Built:
    """Draw with :func:`explain` and write ``out_dir``/dataset.jsonl and manifest.json. A folder
    already holding these very bytes is left as it is; one holding anything else is refused."""
    draw = explain(recipe, store)
    if not draw.rows:
        raise DatasetError(f"recipe {recipe.name!r} draws nothing from {store.path}: {draw.candidates} candidates "
                           f"({', '.join(f'{n} {r}' for r, n in draw.excluded if n) or 'none excluded'}); see `planner-agent data explain`")
    data = "".join(dump_line(r.to_json(draw.store_fingerprint)) + "\n" for r in draw.rows).encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    manifest = {**draw.to_json(), "dataset_sha256": digest}
    text = (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files = {DATASET_FILE: data, MANIFEST_FILE: text}
    if out_dir.exists():
        if not out_dir.is_dir():
            raise DatasetError(f"--out {out_dir} is a file, not a folder")
        present = sorted(p.name for p in out_dir.iterdir())
        if present and all((out_dir / n).is_file() and (out_dir / n).read_bytes() == b for n, b in files.items()) \
                and set(present) == set(files):
            return Built(out_dir, draw, digest, manifest, unchanged=True)
        if present:
            raise DatasetError(f"{out_dir} already holds {'another dataset' if DATASET_FILE in present else 'other files'}: "
                               "choose another --out (a built dataset is never overwritten)")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():  # each file whole or not at all
        tmp = out_dir / f".{name}.part"
        tmp.write_bytes(content)
        os.replace(tmp, out_dir / name)
    return Built(out_dir, draw, digest, manifest, unchanged=False)
