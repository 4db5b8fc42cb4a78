"""Text edits of harness files that keep everything else byte for byte: a line appended to a skill,
a tool's or a parameter's description extended in Python or in a simulated family's YAML, a
sentence added to the system prompt, a recipe's ``weights`` block replaced.

Each edit takes a file's text and returns the new text, or raises :class:`EditError` when the
file is not shaped as expected (so no proposal is written that a person could not read as a
one-line change). Python results are parsed before they are returned.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import yaml

from planner_runtime.coevolve import CoevolveError


class EditError(CoevolveError):
    """A file is not shaped as an edit expects."""


def _joined(old: str, addition: str) -> str:
    """``old`` and ``addition`` as one text: a sentence ends before the addition starts."""
    old = old.rstrip()
    return f"{old}{'' if not old or old.endswith(('.', '!', '?')) else '.'} {addition}".strip()


def _literal(text: str) -> str:
    """A string literal both Python and YAML read back as ``text`` (JSON's double quotes)."""
    return json.dumps(text, ensure_ascii=False)


def _block(lines: list[str], start: int) -> int:
    """The end (exclusive) of the indented block whose header is ``lines[start]``."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def append_line(text: str, line: str) -> str:
    """``text`` with ``line`` as its last line (unchanged when the line is there already)."""
    if line in text.splitlines():
        return text
    return (text if text.endswith("\n") or not text else text + "\n") + line + "\n"


_PY_DESCRIPTION = re.compile(r'description=("(?:[^"\\\n]|\\.)*")')


def python_parameter(text: str, args_class: str, parameter: str, addition: str) -> str:
    """``addition`` appended to the ``description="..."`` of ``parameter`` in class ``args_class``."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"class {args_class}(")), None)
    if start is None:
        raise EditError(f"no class {args_class}")
    for i in range(start + 1, _block(lines, start)):
        if re.match(rf"\s+{re.escape(parameter)}\s*:", lines[i]):
            found = _PY_DESCRIPTION.search(lines[i])
            if found is None:
                raise EditError(f"{args_class}.{parameter} has no one-line description")
            old = ast.literal_eval(found.group(1))
            lines[i] = lines[i][:found.start(1)] + _literal(_joined(old, addition)) + lines[i][found.end(1):]
            return _parsed("".join(lines))
    raise EditError(f"no parameter {parameter} in class {args_class}")


def python_tool(text: str, tool_class: str, addition: str) -> str:
    """``addition`` appended to the one-line ``description = "..."`` of class ``tool_class``."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"class {tool_class}(")), None)
    if start is None:
        raise EditError(f"no class {tool_class}")
    for i in range(start + 1, _block(lines, start)):
        found = re.match(r'(\s+description\s*=\s*)("(?:[^"\\\n]|\\.)*")\s*$', lines[i])
        if found is not None:
            old = ast.literal_eval(found.group(2))
            lines[i] = found.group(1) + _literal(_joined(old, addition)) + "\n"
            return _parsed("".join(lines))
    raise EditError(f"class {tool_class} has no one-line description")


def _parsed(text: str) -> str:
    try:
        ast.parse(text)
    except SyntaxError as exc:  # our edit broke it: refuse rather than propose it
        raise EditError(f"the edit would not parse: {exc.msg} (line {exc.lineno})") from exc
    return text


def yaml_tool(text: str, tool: str, parameter: str | None, addition: str) -> str:
    """In a simulated family file, ``addition`` appended to the description of ``parameter`` of
    ``tool`` (a ``name: {...}`` line), or of the tool itself (its ``description:`` line)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(rf"\s*- name:\s*{re.escape(tool)}\s*$", line)), None)
    if start is None:
        raise EditError(f"no tool {tool}")
    end = _block(lines, start)
    for i in range(start + 1, end):
        line = lines[i]
        if parameter is not None:
            found = re.match(rf"(\s+{re.escape(parameter)}:\s*)(\{{.*\}})\s*$", line)
            if found is None:
                continue
            value = yaml.safe_load(found.group(2))
            if not isinstance(value, dict):
                raise EditError(f"{tool}.{parameter} is not a mapping")
            value["description"] = _joined(str(value.get("description") or ""), addition)
            lines[i] = found.group(1) + json.dumps(value, ensure_ascii=False) + "\n"
        else:
            found = re.match(r"(\s+description:\s*)(.+?)\s*$", line)
            if found is None:
                continue
            old = yaml.safe_load(found.group(2))
            lines[i] = found.group(1) + _literal(_joined(str(old), addition)) + "\n"
        new = "".join(lines)
        yaml.safe_load(new)  # still YAML
        return new
    raise EditError(f"no one-line description of {tool}{'.' + parameter if parameter else ''}")


def described(text: str, tool: str, addition: str) -> str:
    """A revision's ``tool_descriptions.yaml`` with ``addition`` appended to ``tool``'s description
    (the file as :func:`planner_runtime.harness.revision.export_revision` writes it: sorted, dumped)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise EditError(f"not YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict) or tool not in data:
        raise EditError(f"no description of {tool}")
    if addition in str(data[tool]):
        return text
    data[tool] = _joined(str(data[tool]), addition)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100)


def prompt_sentences(text: str, name: str, sentences: list[str]) -> str:
    """``sentences`` added at the end of the parenthesised string constant ``name = ( ... )``."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{name} = (")), None)
    if start is None:
        raise EditError(f"no constant {name} = (...)")
    close = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == ")"), None)
    if close is None:
        raise EditError(f"{name} has no closing ')' line")
    indent = re.match(r"\s*", lines[close - 1]).group(0) or "    "
    lines[close:close] = [f"{indent}{_literal(' ' + s)}\n" for s in sentences]
    return _parsed("".join(lines))


def recipe_weights(text: str, weights: dict[str, dict[str, float]]) -> str:
    """A recipe file's text with its ``weights`` block replaced by ``weights`` (appended when it
    has none); the rest of the file is kept as written."""
    root = yaml.compose(text)
    if not isinstance(root, yaml.MappingNode):
        raise EditError("a recipe file is a mapping (name:, select:, weights:, ...)")
    block = yaml.safe_dump({"weights": weights}, default_flow_style=None, sort_keys=False, allow_unicode=True)
    lines = text.splitlines(keepends=True)
    for key, value in root.value:
        if key.value == "weights":
            first, end = key.start_mark.line, value.end_mark
            last = end.line if end.column == 0 else end.line + 1
            lines[first:last] = [block]
            return "".join(lines)
    return append_line(text.rstrip("\n") + "\n" if text.strip() else "", block.rstrip("\n"))


def read_weights(text: str) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """A recipe's data and its weights, checked enough to edit them (numbers per bucket)."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise EditError("a recipe file is a mapping (name:, select:, weights:, ...)")
    weights = data.get("weights") or {}
    if not isinstance(weights, dict) or not all(
            isinstance(v, dict) and all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in v.values())
            for v in weights.values()):
        raise EditError("weights: expected a mapping of dimension → {bucket: number}")
    return data, {str(k): {str(b): float(w) for b, w in v.items()} for k, v in weights.items()}
