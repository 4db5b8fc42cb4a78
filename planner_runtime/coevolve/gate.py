"""The gate a round's release must pass before a person may promote it.

Held-out success (the test split) must rise, and no category may fall below the lower end of its
95% interval in the baseline: a category that was 6/10 [31–83%] may drop to 4/10 (40%) by chance
on a bench this small, but not to 2/10. Both benches are the bench JSON's ``categories``
(:mod:`planner_runtime.bench.report`): ``{"overall" | "tool" | ...: {"n", "rate", "ci_low", ...}}``.
A category either bench scored no task of is left out, and said so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    before: float | None  # held-out success of the starting release
    after: float | None  # of the round's release
    reasons: tuple[str, ...]  # why it failed, one line each; what was left out, when it passed

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"reasons": list(self.reasons)}


def _rate(group: Mapping[str, Any] | None) -> float | None:
    if not group or not group.get("n"):
        return None
    return group.get("rate")


def gate(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> GateVerdict:
    """Whether ``after`` (the round's release) beats ``before`` (the baseline) as the round needs."""
    b, a = _rate(before.get("overall")), _rate(after.get("overall"))
    failed: list[str] = []
    notes: list[str] = []
    if b is None or a is None:
        failed.append("a bench scored no held-out task: nothing to compare")
    elif a <= b:
        failed.append(f"held-out success did not rise: {a:.1%} against {b:.1%}")
    for name in sorted(set(before) | set(after)):
        if name == "overall":
            continue
        old, new = before.get(name), after.get(name)
        if _rate(old) is None or _rate(new) is None:
            notes.append(f"{name}: not scored in both benches, left out")
            continue
        if new["rate"] < old["ci_low"]:
            failed.append(f"{name} fell to {new['rate']:.1%}, below its baseline interval "
                          f"[{old['ci_low']:.1%}–{old['ci_high']:.1%}] ({old['rate']:.1%})")
    return GateVerdict(not failed, b, a, tuple(failed or notes))
