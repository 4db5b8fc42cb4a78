"""The rules that turn an analysis into edits of files: which clusters call for which change, and
the words of each change. Deterministic: the same analysis and files give the same edits.

- **recipe**: every category and domain with failures gets its weight multiplied by
  :func:`recipe_factor` of its failure rate: ``1 + 2 × rate`` bounded to ×1.5..×3 (a quarter
  failing or less: ×1.5; half: ×2; all: ×3). A bucket the base recipe weighs 0 (dropped on
  purpose) stays 0.
- **skill**: a failing episode whose first error came from a skill's app tool (general tools such
  as ``read_screen`` belong to no one skill) adds a pitfall line to
  that skill naming the error code, the call seen and the hint; one that called another tool
  where the demo calls a skill's tool adds a line naming both.
- **tool_description**: an ``invalid_arguments`` first error extends the description of the
  parameter the hint names (else the tool's own description) with the hint and the value refused.
- **system_prompt**: failing episodes that never called ``finish``, or repeated a call, add one
  sentence each to ``SYSTEM_PROMPT``.

Against a harness revision folder (:mod:`planner_runtime.harness.revision`, what a round revises)
the last two edit its ``tool_descriptions.yaml`` and ``system_prompt.txt`` instead of source files.
"""

from __future__ import annotations

import inspect
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from planner_runtime.coevolve.analysis import Analysis, Attempt, Slice
from planner_runtime.harness.revision import SYSTEM_PROMPT_FILE
from planner_runtime.harness.revision import TOOL_DESCRIPTIONS_FILE as TOOL_DESCRIPTIONS

ADVICE = {
    "invalid_arguments": "Check each argument against the tool's parameters (type, range, format) before calling.",
    "element_not_found": "Read the screen first and use an element id it shows.",
    "app_not_installed": "Use only the tools of apps this phone has.",
    "unknown_tool": "Call only the tools offered.",
    "repeated_action": "Do not call it again on the same screen: change the call, or finish.",
    "unsafe_action": "Ask the user first (ask_user), or say in finish why it was not done.",
    "permission_denied": "Grant or ask for the permission before retrying.",
}
NO_FINISH = "If the goal cannot be reached, call finish and say why instead of running out of steps."
NO_REPEAT = "Never repeat a call that already ran on the same screen: read its feedback and change the call, or finish."
SHOWN = 160  # characters of a hint or of arguments quoted in a proposal


@dataclass(frozen=True)
class Edit:
    """One change to one file, with what motivated it."""

    kind: str
    target: str  # repo-relative path
    change: Callable[[str], str]
    summary: str
    cluster: dict[str, Any]
    trajectories: tuple[str, ...]


def recipe_factor(failure_rate: float) -> float:
    """How much a bucket's weight grows: ``1 + 2 × failure_rate``, bounded to 1.5..3."""
    return round(min(3.0, max(1.5, 1.0 + 2.0 * failure_rate)), 2)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


def _ids(attempts: Sequence[Attempt]) -> tuple[str, ...]:
    return tuple(sorted({a.trajectory_id for a in attempts}))


def _cluster(analysis: Analysis, dimension: str, key: str, **extra: Any) -> dict[str, Any]:
    found = next((s for s in analysis.slices if s.dimension == dimension and s.key == key), None)
    return {**(found.to_json() if found else {"dimension": dimension, "key": key}), **extra}


def _behaviour(analysis: Analysis, key: str, attempts: list[Attempt]) -> dict[str, Any]:
    ids = _ids(attempts)
    return Slice("behaviour", key, len(ids), analysis.attempts, ids[:3]).to_json()


def recipe_weights(analysis: Analysis, base: dict[str, dict[str, float]]) -> tuple[dict[str, dict[str, float]], list[Slice]]:
    """``base`` weights with every failing category and domain raised (see the module's docstring)."""
    weights = {k: dict(v) for k, v in base.items()}
    raised = []
    for dimension in ("category", "domain"):
        for s in analysis.rates(dimension):
            if s.failures == 0 or weights.get(dimension, {}).get(s.key) == 0:
                continue
            old = weights.setdefault(dimension, {}).get(s.key, 1.0)
            weights[dimension][s.key] = round(old * recipe_factor(s.rate), 2)
            raised.append(s)
    return weights, raised


def skill_edits(analysis: Analysis, skills: Sequence[Any], root: Path) -> list[Edit]:
    """Pitfall lines for skills whose tools failed first (see the module's docstring)."""
    from planner_runtime.coevolve.edits import append_line

    from planner_runtime.coevolve.analysis import tool_apps

    edits = []
    apps = tool_apps()
    for skill in sorted(skills, key=lambda s: s.name):
        tools = {t for t in skill.referenced_tools() if t in apps}  # general tools (read_screen, ...) belong to no one skill
        lines: dict[str, list[Attempt]] = defaultdict(list)
        for a in analysis.failed:
            if a.error_call is not None and a.error_call.name in tools:
                line = (f"- Pitfall: `{a.error_call.name}` called with "
                        f"{_short(a.error_call.arguments)} failed with {a.error}: {_short(a.error_hint).rstrip('.')}. "
                        f"{ADVICE.get(a.error, 'Read the feedback hint before the next call.')}")
                lines[line].append(a)
            elif a.demo is not None and a.demo.kind == "tool" and a.demo.expected and a.demo.expected.name in tools:
                line = (f"- Pitfall: `{a.demo.actual.name if a.demo.actual else '?'}` "
                        f"was called where `{a.demo.expected.name}` does the job.")
                lines[line].append(a)
        if not lines:
            continue
        path = Path(skill.path).resolve()
        try:
            target = path.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue  # a skill from elsewhere (PLANNER_AGENT_SKILLS_DIR): not a file of this tree
        chosen = sorted(lines.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        first = chosen[0][1][0]
        cluster = (_cluster(analysis, "tool", first.error_call.name, error=first.error) if first.error_call is not None
                   else _cluster(analysis, "demo_step", first.demo_key or ""))
        texts = [line for line, _ in chosen]

        def change(text: str, texts: list[str] = texts) -> str:
            for line in texts:
                text = append_line(text, line)
            return text

        edits.append(Edit("skill", target, change, f"skill {skill.name}: {len(texts)} pitfall line(s) from failures of its tools",
                          cluster, _ids([a for _, group in chosen for a in group])))
    return edits


def _locate(tool: str) -> tuple[Path, str, str | None] | None:
    """Where ``tool`` is declared: (file, tool class, args class) for Python, (file, "", None) for a family."""
    from planner_runtime.harness.subagents import Delegate
    from planner_runtime.harness.toolbox import PER_EPISODE, default_toolset
    from planner_runtime.harness.tools.simulated.family import FAMILIES_DIR

    for cls in [type(t) for t in default_toolset()] + [*PER_EPISODE, Delegate]:
        if cls.name == tool:
            return Path(inspect.getsourcefile(cls) or "").resolve(), cls.__name__, getattr(cls.Args, "__name__", None)
    for path in sorted(FAMILIES_DIR.glob("*.yaml")):
        if any(line.strip() == f"- name: {tool}" for line in path.read_text(encoding="utf-8").splitlines()):
            return path.resolve(), "", None
    return None


def tool_edits(analysis: Analysis, package_root: Path, revision: Path | None = None) -> list[Edit]:
    """Description edits for tools whose arguments were refused (see the module's docstring);
    with ``revision`` (a harness revision folder) the edit is to its ``tool_descriptions.yaml``,
    else to the file that declares the tool."""
    from planner_runtime.coevolve import edits as ed

    groups: dict[str, list[Attempt]] = defaultdict(list)
    for a in analysis.failed:
        if a.error == "invalid_arguments" and a.error_call is not None:
            groups[a.error_call.name].append(a)
    out = []
    for tool in sorted(groups):
        found = None if revision is not None else _locate(tool)
        if revision is None and found is None:
            continue
        if found is not None:
            path, tool_class, args_class = found
            try:
                target = path.relative_to(package_root.resolve()).as_posix()
            except ValueError:
                continue
        else:
            tool_class, args_class, target = "", None, TOOL_DESCRIPTIONS
        first = groups[tool][0]
        hint = first.error_hint.split(";")[0].strip()
        parameter = hint.split(":", 1)[0].strip() if ":" in hint else None
        if parameter is not None and parameter not in first.error_call.arguments and not parameter.isidentifier():
            parameter = None
        seen = first.error_call.arguments.get(parameter) if parameter else first.error_call.arguments
        reason = hint.split(":", 1)[1].strip() if parameter else hint
        addition = f"Mind: {_short(reason)} (a call with {_short(seen)} was refused)."

        def change(text: str, tool: str = tool, parameter: str | None = parameter, addition: str = addition,
                   tool_class: str = tool_class, args_class: str | None = args_class, target: str = target) -> str:
            if target == TOOL_DESCRIPTIONS:
                return ed.described(text, tool, addition)
            if target.endswith((".yaml", ".yml")):
                try:
                    return ed.yaml_tool(text, tool, parameter, addition)
                except ed.EditError:
                    return ed.yaml_tool(text, tool, None, addition)
            if parameter and args_class:
                try:
                    return ed.python_parameter(text, args_class, parameter, addition)
                except ed.EditError:
                    pass
            return ed.python_tool(text, tool_class, addition)

        out.append(Edit("tool_description", target, change,
                        f"{tool}: say in its description what was refused ({_short(hint)})",
                        _cluster(analysis, "tool", tool, error="invalid_arguments", parameter=parameter), _ids(groups[tool])))
    return out


def prompt_edits(analysis: Analysis, package_root: Path, revision: Path | None = None) -> list[Edit]:
    """Sentences for the system prompt from episodes without finish or with repeated calls; with
    ``revision`` (a harness revision folder) added to its ``system_prompt.txt``."""
    from planner_runtime.coevolve.edits import prompt_sentences
    from planner_runtime.harness import episode

    unfinished = [a for a in analysis.failed if not a.finished]
    repeated = [a for a in analysis.failed if a.repeated]
    sentences = [s for s, group in ((NO_FINISH, unfinished), (NO_REPEAT, repeated)) if group]
    if not sentences:
        return []
    if revision is not None:
        target = SYSTEM_PROMPT_FILE
    else:
        try:
            target = Path(inspect.getsourcefile(episode) or "").resolve().relative_to(package_root.resolve()).as_posix()
        except ValueError:
            return []
    main, key = (unfinished, "no_finish") if len(unfinished) >= len(repeated) else (repeated, "repeated_call")

    def change(text: str) -> str:
        current = " ".join(text.split())
        new = [s for s in sentences if s not in current]
        if target == SYSTEM_PROMPT_FILE:
            return text.rstrip("\n") + "".join(" " + s for s in new) + "\n" if new else text
        return prompt_sentences(text, "SYSTEM_PROMPT", new)

    return [Edit("system_prompt", target, change, "system prompt: " + " ".join(sentences),
                 _behaviour(analysis, key, main), _ids(unfinished + repeated))]
