"""Proposals: changes to the data recipe and the harness, each a unified diff of one file with the
failures that motivated it, written by the rules of :mod:`.rules` from an :class:`Analysis`.

A proposal is a JSON file (the format the rounds read): ``id``, ``kind`` (``recipe``, ``skill``,
``tool_description`` or ``system_prompt``), ``target`` (the recipe's path, or a file relative to
the source tree), ``diff``, ``summary`` and ``motivation`` (``cluster``, ``trajectories``,
``count``). Edits of one file are one proposal, so proposals apply independently. Nothing here
changes a file in place: :func:`apply` writes under a root a round gives (a copy of the tree),
and refuses the installed package itself. :func:`load_proposal` checks a file as hostile input
and names the file and the field of the first problem.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from planner_runtime.coevolve import ProposalError
from planner_runtime.coevolve.analysis import Analysis
from planner_runtime.coevolve.edits import EditError, read_weights, recipe_weights as edit_weights
from planner_runtime.coevolve.patches import PatchError, apply_diff, make_diff, parse_diff
from planner_runtime.coevolve.rules import Edit, prompt_edits, recipe_factor, recipe_weights, skill_edits, tool_edits

KINDS = ("recipe", "skill", "tool_description", "system_prompt")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")


@dataclass(frozen=True)
class Motivation:
    cluster: dict[str, Any]
    trajectories: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class Proposal:
    id: str
    kind: str
    target: str
    diff: str
    summary: str
    motivation: Motivation

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "diff": self.diff, "summary": self.summary,
                "motivation": {"cluster": self.motivation.cluster, "trajectories": list(self.motivation.trajectories),
                               "count": self.motivation.count}}


def source_root() -> Path:
    """The tree this runtime's files live in (a checkout's root, or site-packages)."""
    import planner_runtime

    return Path(planner_runtime.__file__).resolve().parents[1]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"


def _proposal(kind: str, target: str, diff: str, summary: str, cluster: dict[str, Any], ids: tuple[str, ...]) -> Proposal:
    stem = PurePosixPath(target).parent.name if kind == "skill" else PurePosixPath(target).stem
    digest = hashlib.sha1(diff.encode()).hexdigest()[:8]
    return Proposal(f"{kind}.{_slug(stem)}.{digest}", kind, target, diff, summary, Motivation(cluster, ids, len(ids)))


def _recipe_target(base: Path | None, name: str) -> str:
    """A base recipe's path as given when it is relative and inside the folder, else its name;
    a new recipe's ``recipes/<name>.yaml``."""
    if base is None:
        return f"recipes/{name}.yaml"
    try:
        return _safe_target(base.as_posix()).as_posix()
    except ValueError:
        return base.name


def recipe_proposal(analysis: Analysis, base: Path | None = None, *, target: str | None = None) -> Proposal | None:
    """The re-weighting of ``base`` (a recipe file; None: a new recipe selecting this collection),
    raising the failing categories and domains; None when nothing failed."""
    if base is not None:
        try:
            text = base.read_text(encoding="utf-8")
            _, weights = read_weights(text)
        except (OSError, UnicodeDecodeError) as exc:
            raise ProposalError(f"{base}: cannot read the recipe: {exc}") from exc
        except (EditError, ValueError) as exc:  # yaml's errors are ValueErrors
            raise ProposalError(f"{base}: weights: {exc}") from exc
    else:
        text, weights = "", {}
    new, raised = recipe_weights(analysis, weights)
    if not raised:
        return None
    name = _slug(f"after-{analysis.collection}")
    if base is None:
        new_text = "\n".join([
            f"# Written by `planner-agent analyze {analysis.collection}`: weights raised where it failed (×1.5..×3).",
            f"name: {name}", "select:", f"  collections: [{analysis.collection}]", "  split: train", "  success: true", ""])
        new_text = edit_weights(new_text, new) + "caps:\n  per_task: 4\ndedup: true\nsize: 300\nseed: 0\n"
    else:
        new_text = edit_weights(text, new)
    where = target or _recipe_target(base, name)
    diff = make_diff(text, new_text, where, create=base is None)
    worst = raised[0] if len(raised) == 1 else min(raised, key=lambda s: (s.success_rate, -s.failures, s.dimension, s.key))
    ids = tuple(sorted({a.trajectory_id for a in analysis.failed for s in raised if s.key in a.keys(s.dimension)}))
    summary = "recipe: raise " + ", ".join(f"{s.dimension} {s.key} ×{recipe_factor(s.rate)} ({s.failures}/{s.attempts} failed)"
                                           for s in raised)
    return _proposal("recipe", where, diff, summary, worst.to_json(), ids)


def propose(analysis: Analysis, *, root: Path | None = None, recipe: Path | None = None,
            recipe_target: str | None = None, harness: Path | None = None) -> tuple[list[Proposal], list[str]]:
    """Every proposal the rules make for ``analysis``, diffs against the files under ``root``
    (default: :func:`source_root`), in a fixed order; and a note for each edit left out. With
    ``harness`` (a harness revision folder) the harness proposals are diffs against its files
    (``skills/``, ``tool_descriptions.yaml``, ``system_prompt.txt``), targets relative to it."""
    from planner_runtime.harness.skills import load_skills

    if harness is not None:
        root = harness
    tree = (root or source_root()).resolve()
    skills_dir = next((d for d in (tree / "skills", tree / "planner_runtime" / "skills") if d.is_dir()), None)
    out, notes = [], []
    made = recipe_proposal(analysis, recipe, target=recipe_target)
    if made is not None:
        out.append(made)
    edits: list[Edit] = skill_edits(analysis, load_skills(skills_dir) if skills_dir else [], tree)
    edits += tool_edits(analysis, source_root(), harness) + prompt_edits(analysis, source_root(), harness)
    for edit in edits:
        path = tree / edit.target
        try:
            old = path.read_text(encoding="utf-8")
            diff = make_diff(old, edit.change(old), edit.target)
        except (OSError, EditError) as exc:
            notes.append(f"{edit.kind} {edit.target}: left out ({exc})")
            continue
        if diff:
            out.append(_proposal(edit.kind, edit.target, diff, edit.summary, edit.cluster, edit.trajectories))
    return out, notes


# -- files -----------------------------------------------------------------------------------------
def _problem(source: str, field: str, why: str) -> ProposalError:
    return ProposalError(f"{source}: {field}: {why}")


def _safe_target(target: str) -> PurePosixPath:
    path = PurePosixPath(target)
    if path.is_absolute() or ".." in path.parts or not path.parts or "\\" in target:
        raise ValueError("must be a relative path inside the tree (no '..', not absolute)")
    return path


def proposal_from_json(data: Any, source: str = "<proposal>", root: Path | None = None) -> Proposal:
    """A proposal read from JSON data, every field checked; with ``root``, its diff must apply to
    the target under it."""
    if not isinstance(data, dict):
        raise _problem(source, "(file)", "expected a JSON object")
    for field in ("id", "kind", "target", "diff", "summary", "motivation"):
        if field not in data:
            raise _problem(source, field, "missing")
    extra = sorted(set(data) - {"id", "kind", "target", "diff", "summary", "motivation"})
    if extra:
        raise _problem(source, extra[0], "unknown field")
    for field in ("id", "kind", "target", "diff", "summary"):
        if not isinstance(data[field], str):
            raise _problem(source, field, "expected a string")
    if not _ID.match(data["id"]):
        raise _problem(source, "id", f"{data['id'][:60]!r} is not an id ([a-z0-9._-], at most 120)")
    if data["kind"] not in KINDS:
        raise _problem(source, "kind", f"unknown kind {data['kind'][:40]!r}; one of {', '.join(KINDS)}")
    try:
        _safe_target(data["target"])
    except ValueError as exc:
        raise _problem(source, "target", str(exc)) from exc
    m = data["motivation"]
    if not isinstance(m, dict):
        raise _problem(source, "motivation", "expected an object")
    for field, kind in (("cluster", dict), ("trajectories", list), ("count", int)):
        if not isinstance(m.get(field), kind) or isinstance(m.get(field), bool):
            raise _problem(source, f"motivation.{field}", f"missing or not {'an object' if kind is dict else 'a list' if kind is list else 'a number'}")
    if not all(isinstance(t, str) for t in m["trajectories"]):
        raise _problem(source, "motivation.trajectories", "expected trajectory ids (strings)")
    try:
        parsed = parse_diff(data["diff"])
    except PatchError as exc:
        raise _problem(source, "diff", str(exc)) from exc
    if parsed.new_path != data["target"]:
        raise _problem(source, "diff", f"it changes {parsed.new_path!r}, not the target {data['target']!r}")
    found = Proposal(data["id"], data["kind"], data["target"], data["diff"], data["summary"],
                     Motivation(dict(m["cluster"]), tuple(m["trajectories"]), m["count"]))
    if root is not None:
        path = root / data["target"]
        try:
            apply_diff(parsed, path.read_text(encoding="utf-8") if path.exists() else None)
        except PatchError as exc:
            raise _problem(source, "diff", f"no longer applies to {path}: {exc}") from exc
    return found


def load_proposal(path: Path, root: Path | None = None) -> Proposal:
    """The proposal in file ``path`` (see :func:`proposal_from_json`)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _problem(str(path), "(file)", exc.strerror or str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise _problem(str(path), "(file)", "not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise _problem(str(path), f"line {exc.lineno}", f"not JSON: {exc.msg}") from exc
    return proposal_from_json(data, str(path), root)


def apply(proposal: Proposal, root: Path) -> list[Path]:
    """Apply ``proposal`` to the copy of the tree at ``root``; the paths changed. Refuses the
    installed package's own tree: a round works on a copy."""
    if root.resolve() == source_root():
        raise ProposalError(f"{root} is the installed runtime's own tree; apply proposals to a copy of it")
    try:
        path = root / _safe_target(proposal.target)
    except ValueError as exc:
        raise _problem(proposal.id, "target", str(exc)) from exc
    try:
        new = apply_diff(proposal.diff, path.read_text(encoding="utf-8") if path.exists() else None)
    except PatchError as exc:
        raise _problem(proposal.id, "diff", f"does not apply to {path}: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return [path]


def write_proposals(proposals: list[Proposal], folder: Path) -> list[Path]:
    """One ``<id>.json`` per proposal in ``folder``; refuses (writing nothing) when any exists."""
    paths = [folder / f"{p.id}.json" for p in proposals]
    taken = [p for p in paths if p.exists()]
    if taken:
        raise ProposalError(f"{taken[0]} exists; choose a new --out folder (nothing is overwritten)")
    folder.mkdir(parents=True, exist_ok=True)
    for proposal, path in zip(proposals, paths):
        path.write_text(json.dumps(proposal.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths
