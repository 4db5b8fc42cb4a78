"""Checks that every template of a task renders with every parameter set it can be given.

A task's goal, setup and checks are templates filled from its parameters. Loading a task renders
each one with its params, each variant and each random choice, so a typo in a placeholder, a value
that does not fit its place in a ``where`` (:mod:`planner_runtime.tasks.where`), a parameter that
would make a URI name other rows or a path leave its folder is found when the file is read,
naming the field, rather than when a phone is seeded.
"""

from __future__ import annotations

import re
from string import Formatter
from typing import Any, Iterator, Mapping, Protocol, Sequence

from planner_runtime.tasks.declarations import CheckSpec, SetupAction
from planner_runtime.tasks.where import WhereError, parse_where

Loc = tuple[str | int, ...]


class Choices(Protocol):
    choice: tuple[Any, ...] | None


class Templated(Protocol):
    """What of a task its templates are read from (a :class:`~planner_runtime.tasks.spec.TaskSpec`,
    which calls :func:`check_templates` on itself while it is validated)."""

    goal: str
    setup: Sequence[SetupAction]
    checks: Sequence[CheckSpec]
    user_answers: Mapping[str, str]
    variants: Sequence[Mapping[str, Any]]
    random: Mapping[str, Choices]

    @property
    def values(self) -> dict[str, Any]: ...


class FieldProblem(ValueError):
    """A task's field that a check across fields found wrong; ``loc`` is its path in the task."""

    def __init__(self, loc: Loc, message: str) -> None:
        self.loc, self.message = loc, message
        super().__init__(f"{'.'.join(str(p) for p in loc)}: {message}")


_URI_VALUE = re.compile(r"[A-Za-z0-9._~\-]+\Z")


def _why(exc: BaseException) -> str:
    return f"no parameter {exc}" if isinstance(exc, KeyError) else str(exc)


def _render_problem(kind: str, text: str, values: dict[str, Any]) -> str | None:
    """Why ``text`` (a template of ``kind``) cannot be rendered with ``values``, or None."""
    if kind == "where":
        try:
            parse_where(text).render(values)
        except WhereError as exc:
            return str(exc)
        return None
    try:
        rendered = text.format(**values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        return f"template does not render: {_why(exc)}"
    if kind == "uri":
        # a parameter in a URI is one path segment: an empty or "a/b" value would name other rows
        for _, field, _, _ in Formatter().parse(text):
            if field is not None and not _URI_VALUE.match(format(values[field]) if field in values else ""):
                return f"{{{field}}} in a URI must be one path segment (letters, digits, . _ ~ -)"
    elif kind == "path" and ("\0" in rendered or "\n" in rendered or "/../" in rendered + "/"):
        return f"the path {rendered!r} leaves its folder or holds a NUL or newline"
    elif kind == "number":
        try:
            float(rendered)
        except ValueError:
            return f"{rendered!r} is not a number"
    elif kind == "trigger":
        from planner_runtime.harness.memory.records import Trigger  # the memory package, loaded only here

        try:
            Trigger.parse(rendered)
        except ValueError as exc:
            return str(exc)
    return None


def value_sets(task: Templated) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every parameter set a template can be rendered with: the params, each variant, and
    each choice of a random parameter (each placeholder is rendered on its own, so trying
    the choices one at a time covers their combinations)."""
    base = task.values
    yield "params", base
    for n, extra in enumerate(task.variants, start=1):
        yield f"variant {n}", {**base, **extra}
    for name, value in task.random.items():
        for option in value.choice or ():
            yield f"random {name} = {option!r}", {**base, name: option}


def templates(task: Templated) -> Iterator[tuple[Loc, str, str]]:
    """(location, kind, text) of every template in the setup, the checks and the answers."""
    for i, a in enumerate(task.setup):
        at: Loc = ("setup", i, a.kind)
        if a.content_insert is not None:
            yield at + ("uri",), "uri", a.content_insert.uri
            yield from ((at + ("values", k), "text", v) for k, v in a.content_insert.values.items() if isinstance(v, str))
        elif a.content_delete is not None:
            yield at + ("uri",), "uri", a.content_delete.uri
            if a.content_delete.where:
                yield at + ("where",), "where", a.content_delete.where
        elif a.memory is not None:
            yield at + ("text",), "text", a.memory.text
            if a.memory.trigger is not None:
                yield at + ("trigger",), "trigger", a.memory.trigger
        elif a.settings_put is not None and isinstance(a.settings_put.value, str):
            yield at + ("value",), "text", a.settings_put.value
        elif a.file_push is not None:
            yield at + ("path",), "path", a.file_push.path
            yield at + ("content",), "text", a.file_push.content
        elif a.folder_empty is not None:
            yield at + ("path",), "path", a.folder_empty.path
        elif a.world is not None:
            for n, row in enumerate(a.world.rows):
                yield from ((at + ("rows", n, k), "text", v) for k, v in row.items() if isinstance(v, str))
    for i, c in enumerate(task.checks):
        at = ("checks", i, c.kind)
        if c.content is not None:
            yield at + ("uri",), "uri", c.content.uri
            if c.content.where:
                yield at + ("where",), "where", c.content.where
        elif c.answer_contains is not None or c.answer_equals is not None:
            yield at, "text", c.answer_contains if c.answer_contains is not None else c.answer_equals
        elif c.answer_excludes is not None:
            yield from ((at + (n,), "text", wrong) for n, wrong in enumerate(c.answer_excludes))
        elif c.answer_number is not None and isinstance(c.answer_number.value, str):
            yield at + ("value",), "number", c.answer_number.value
        elif c.setting is not None and isinstance(c.setting.equals, str):
            yield at + ("equals",), "text", c.setting.equals
        elif c.file is not None:
            yield at + ("path",), "path", c.file.path
            if c.file.contains is not None:
                yield at + ("contains",), "text", c.file.contains
        elif c.world is not None:
            yield from ((at + ("match", k), "text", v) for k, v in c.world.match.items() if isinstance(v, str))
            if isinstance(c.world.equals, str):
                yield at + ("equals",), "text", c.world.equals
    for question, answer in task.user_answers.items():
        yield ("user_answers", question), "text", answer


def check_templates(task: Templated) -> None:
    """Raise :class:`FieldProblem` at the first template that does not render."""
    for label, values in value_sets(task):
        try:
            task.goal.format(**values)
        except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
            raise FieldProblem(("goal",), f"goal template does not render with {label}: {_why(exc)}") from None
        for loc, kind, text in templates(task):
            problem = _render_problem(kind, text, values)
            if problem is not None:
                raise FieldProblem(loc, f"{problem} (with {label})")
