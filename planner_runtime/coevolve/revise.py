"""A round's revision: the harness in use and the recipe, with the proposals a person approved applied.

Before the analysis, the harness in use is written out as a revision folder
(:func:`planner_runtime.harness.revision.files.export_current`) beside the round's starting recipe,
``base/``: the proposals are diffs against those files. After the decisions ``revised/`` is a copy
of ``base/`` with each approved proposal applied — a skill's text, a tool's description, the
system prompt, a re-weighting — never to the installed package. The recipe starts as the
round's base recipe (or :data:`DEFAULT_RECIPE`). Both are checked before the
round goes on: a revision that no longer parses, or a recipe the builder refuses, stops it here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from planner_runtime.coevolve.rounds import RoundError
from planner_runtime.errors import PlannerRuntimeError

HARNESS_KINDS = ("skill", "tool_description", "system_prompt")
DEFAULT_RECIPE = """\
name: {name}
select:
  split: train
  success: true
weights: {{}}
caps:
  per_task: 4
dedup: true
size: 400
seed: 0
"""


def prepare(root: Path, *, base_recipe: Path | None, name: str) -> tuple[Path, Path]:
    """Write ``root/base``: the harness in use as a revision folder and the round's starting
    recipe, the files the analysis's proposals are diffs against. Made again from the same
    inputs when a stage that did not finish left one."""
    from planner_runtime.harness.revision.files import export_current

    base = root / "base"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    export_current(base / "harness")
    recipe = base / "recipe.yaml"
    recipe.write_text(base_recipe.read_text(encoding="utf-8") if base_recipe else DEFAULT_RECIPE.format(name=name), encoding="utf-8")
    return base / "harness", recipe


def revise(root: Path, approved: list[Path]) -> dict[str, Any]:
    """Write ``root/revised``: ``root/base`` with the ``approved`` proposals applied (harness
    proposals to its ``harness/``, recipe proposals to its ``recipe.yaml``), checked."""
    from planner_runtime.coevolve.proposals import apply, load_proposal
    from planner_runtime.harness.revision import load_revision
    from planner_runtime.harness.revision.files import check_revision

    revised = root / "revised"
    if revised.exists():  # left by a stage that did not finish: made again from the same inputs
        shutil.rmtree(revised)
    shutil.copytree(root / "base", revised)
    applied = []
    for path in approved:
        proposal = load_proposal(path)
        target_root = revised / "harness" if proposal.kind in HARNESS_KINDS else revised
        try:
            changed = apply(proposal, target_root)
        except PlannerRuntimeError as exc:  # a proposal that no longer applies stops the round, named
            raise RoundError(f"proposal {proposal.id} ({path}) does not apply to the round's {proposal.kind}: {exc}") from exc
        applied.append({"id": proposal.id, "kind": proposal.kind, "changed": [str(c) for c in changed]})
    problems = check_revision(revised / "harness")
    if problems:
        raise RoundError("the revised harness is not sound: " + "; ".join(problems[:3]))
    return {"harness": str(revised / "harness"), "harness_release": load_revision(revised / "harness").release,
            "recipe": str(revised / "recipe.yaml"), "applied": applied}


def with_collection(recipe: Path, collection: str) -> Path:
    """The round's recipe drawing from ``collection`` (the demos collected under the revision)
    beside any collections it already names; written next to it as ``recipe.final.yaml``."""
    try:
        data = yaml.safe_load(recipe.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise RoundError(f"{recipe}: cannot be read ({exc})") from exc
    if not isinstance(data, dict):
        raise RoundError(f"{recipe}: a recipe is a mapping")
    select = dict(data.get("select") or {})
    select["collections"] = sorted({*(select.get("collections") or []), collection})
    data["select"] = select
    out = recipe.with_name("recipe.final.yaml")
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out
