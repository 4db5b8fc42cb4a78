"""Promoting a release to the default: a person's approval and a bench on the test split at least
as good as the current default's, both recorded in the release's manifest.

The evidence is a ``planner-agent bench`` run that benched the release (``--planner local
--release NAME``) and the current default (the promoted release, or the base model while none
is) side by side on held-out templates (``--split test``); the bench figures come from its
collections in the store, read by :func:`planner_runtime.bench.runner.results`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from planner_runtime.training import releases
from planner_runtime.training.releases import BASE, ReleaseError

RELEASE_MODEL = "release:"  # how a collection records ``--release NAME`` as its model


@dataclass(frozen=True)
class BenchEvidence:
    """One bench's overall figures for a release and for the default it would replace."""

    bench: str
    split: str
    release: str
    rate: float | None
    n: int
    default: str  # a release name, or "base"
    default_rate: float | None
    default_n: int
    categories: dict[str, Any]  # the release's figures per category, as the bench's JSON has them

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def model_of(release: str) -> str:
    """The ``model`` a collection records for ``--planner local --release release``."""
    return RELEASE_MODEL + release


def is_model_of(model: str | None, release: str) -> bool:
    """Whether a collection's ``model`` is ``release`` (the base also answers to no model at all)."""
    if release == BASE and (model is None or model.strip().lower() in ("", "embedded", "default")):
        return True
    return model == model_of(release)


def check(evidence: BenchEvidence) -> None:
    """Refuse promotion unless the bench was on the test split and the release did at least as well."""
    if evidence.split != "test":
        raise ReleaseError(f"bench {evidence.bench} ran split {evidence.split!r}: promotion needs a bench on the test split (--split test)")
    if evidence.rate is None or evidence.n == 0:
        raise ReleaseError(f"bench {evidence.bench} scored no task for release {evidence.release!r}")
    if evidence.default_rate is None or evidence.default_n == 0:
        raise ReleaseError(f"bench {evidence.bench} scored no task for the current default ({evidence.default})")
    if evidence.rate < evidence.default_rate:
        raise ReleaseError(f"release {evidence.release!r} succeeded on {evidence.rate:.0%} of bench {evidence.bench}'s test tasks, "
                           f"the current default ({evidence.default}) on {evidence.default_rate:.0%}: not promoted")


def promote(home: Path, name: str, *, by: str, evidence: BenchEvidence, cache_dir: Path | None = None) -> releases.Manifest:
    """Make ``name`` the default: its manifest gains the bench result and the approval."""
    if not by.strip():
        raise ReleaseError("--by: name the person who approves the promotion")
    manifest = releases.load_manifest(home, name)
    if releases.default_release(home) == name:
        raise ReleaseError(f"release {name!r} is already the default")
    releases.verify(home, manifest, cache_dir)
    if evidence.release != name:
        raise ReleaseError(f"the bench evidence is for {evidence.release!r}, not {name!r}")
    check(evidence)
    entry = {**evidence.to_json(), "recorded_at": datetime.now(timezone.utc).isoformat()}
    updated = manifest.model_copy(update={"bench": (*manifest.bench, entry),
                                          "approval": releases.Approval(by=by.strip(), at=datetime.now(timezone.utc))})
    if name not in releases.builtin_names():  # a shipped release's manifest is read-only: the approval is the promotion
        releases.write_manifest(releases.release_path(home, name), updated)
    releases.set_default(home, name)
    return updated
