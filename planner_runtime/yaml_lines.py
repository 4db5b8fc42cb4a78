"""Reading a declaration file (YAML) so that every problem names its file, line and field.

Task suites (:mod:`planner_runtime.tasks.spec`) and simulated tool families
(:mod:`planner_runtime.harness.tools.simulated.family`) are pydantic models read from YAML; a
user who wrote one wrong gets the line of the field pydantic refused, in the words of the YAML
("expected a list, got a mapping"), never a stack trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import yaml
from pydantic import ValidationError

from planner_runtime.errors import TaskSpecError

Problem = Callable[[str, int | None, str, str], TaskSpecError]
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def line_of(node: yaml.Node | None, loc: Iterable[Any]) -> int | None:
    """1-based line of the YAML node at pydantic error location ``loc`` (deepest found)."""
    line = node.start_mark.line + 1 if node is not None and node.start_mark is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
            if match is None:
                break
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            continue  # pydantic adds union/tag names that are not in the YAML
        line = node.start_mark.line + 1
    return line


_SHAPES = {dict: "a mapping (key: value)", list: "a list", str: "a string", bool: "true/false", int: "a number",
           float: "a number", type(None): "nothing"}
_EXPECTED = {"dict_type": "a mapping (key: value)", "model_type": "a mapping (key: value)", "model_attributes_type": "a mapping (key: value)",
             "tuple_type": "a list", "list_type": "a list", "string_type": "a string"}


def message(err: Any) -> str:
    """pydantic's message in the words of the YAML: "expected a list, got a mapping"."""
    expected = _EXPECTED.get(err["type"])
    if expected is not None:
        got = next((name for kind, name in _SHAPES.items() if isinstance(err.get("input"), kind)), "something else")
        return f"expected {expected}, got {got}"
    return err["msg"].removeprefix("Value error, ")


def read_yaml(path: Path, problem: Problem = TaskSpecError) -> tuple[Any, yaml.Node | None, list[TaskSpecError]]:
    """The data and node tree of a YAML file, or the one problem that stops it being read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, None, [problem(str(path), None, "file", exc.strerror or str(exc))]
    except UnicodeDecodeError as exc:
        text_line = path.read_bytes()[: exc.start].count(b"\n") + 1
        return None, None, [problem(str(path), text_line, "file", f"not UTF-8 text (byte {exc.object[exc.start]:#04x})")]
    try:  # libyaml's parser where PyYAML was built with it: a large suite reads ~10x faster
        node = yaml.compose(text, Loader=_LOADER)
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, None, [problem(str(path), mark.line + 1 if mark else None, "yaml", str(exc).splitlines()[0])]
    except RecursionError:
        return None, None, [problem(str(path), None, "yaml", "nested too deeply")]
    return data, node, []


def validation_problems(
    path: Path, node: yaml.Node | None, exc: ValidationError, problem: Problem = TaskSpecError, *, root: str = "tasks",
) -> list[TaskSpecError]:
    """One problem per field pydantic refused; a field refused by several members of a union
    (each saying why it is not that member) is reported once, by the first. A model validator
    may raise an exception with ``loc`` and ``message`` (a field it found wrong across fields):
    the problem points at that field."""
    problems: dict[str, TaskSpecError] = {}
    errors = exc.errors()
    deeper = {tuple(e["loc"][:n]) for e in errors for n in range(len(e["loc"]))}
    for err in errors:
        if err["type"] == "too_short" and tuple(err["loc"]) in deeper:
            continue  # "no tasks left" only because the tasks below it were refused: those say why
        loc, text = list(err["loc"]), message(err)
        found = err.get("ctx", {}).get("error")
        if hasattr(found, "loc") and hasattr(found, "message"):  # found by a check across fields
            loc, text = loc + list(found.loc), found.message
        field = ".".join(str(p) for p in loc) or root
        line = line_of(node, loc)
        problems.setdefault(f"{line}:{field}", problem(str(path), line, field, text))
    return sorted(problems.values(), key=lambda p: p.line or 0)
