"""A round's revision: the harness in use and the recipe, with the proposals a person approved applied.

The harness is written out as a revision folder (:func:`planner_runtime.harness.revision.files.export_current`)
and each approved harness proposal is applied to it — a skill's text, a tool's description, the
system prompt — never to the installed package. The recipe starts as the round's base recipe
(or :data:`DEFAULT_RECIPE`) and takes the approved re-weightings. Both are checked before the
round goes on: a revision that no longer parses, or a recipe the builder refuses, stops it here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from planner_runtime.coevolve.rounds import RoundError

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


def revise(root: Path, approved: list[Path], *, base_recipe: Path | None, name: str) -> dict[str, Any]:
    """Write ``root/harness`` and ``root/recipe.yaml`` with the ``approved`` proposals applied."""
    from planner_runtime.coevolve.proposals import apply, load_proposal
    from planner_runtime.harness.revision import load_revision
    from planner_runtime.harness.revision.files import check_revision, export_current

    harness = root / "harness"
    if harness.exists():  # left by a stage that did not finish: it is made again from the same inputs
        shutil.rmtree(harness)
    export_current(harness)
    recipe = root / "recipe.yaml"
    recipe.write_text(base_recipe.read_text(encoding="utf-8") if base_recipe else DEFAULT_RECIPE.format(name=name), encoding="utf-8")
    applied = []
    for path in approved:
        proposal = load_proposal(path)
        target_root = harness if proposal.kind in HARNESS_KINDS else root
        try:
            changed = apply(proposal, target_root)
        except Exception as exc:  # noqa: BLE001 - a proposal that no longer applies is the round's stop, named
            raise RoundError(f"proposal {proposal.id} ({path}) does not apply to the round's {proposal.kind}: {exc}") from exc
        applied.append({"id": proposal.id, "kind": proposal.kind, "changed": [str(c) for c in changed]})
    problems = check_revision(harness)
    if problems:
        raise RoundError("the revised harness is not sound: " + "; ".join(problems[:3]))
    return {"harness": str(harness), "harness_release": load_revision(harness).release, "recipe": str(recipe), "applied": applied}


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
