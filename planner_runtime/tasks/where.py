"""``where`` templates: a content provider selection with task parameters in it, rendered so that
a parameter is always data and never SQL.

Android's ``content`` tool takes a selection (``--where``) but no selection arguments, so a
parameter cannot be bound as ``?``: it is written into the SQL, and where its placeholder stands
decides how.

- Inside a string literal (``name = '{name}'``, ``items = '1x {dish}'``): the value's text with
  every ``'`` doubled, as SQLite reads ``''`` inside a literal, so no value can end the literal.
- Outside any literal (``hour = {hour}``): only a number (an int or a finite float; true/false
  as 1/0). A string there would be SQL, so it is refused.
- Anywhere else it is refused when the task is loaded: in a LIKE/GLOB/MATCH/REGEXP pattern or its
  ESCAPE (a ``%`` or ``_`` in the value would match other rows; compare with ``=`` or use
  ``instr(column, '{p}') > 0``), in a quoted identifier (``"..."``, ``[...]``, backticks) or in a
  comment.

:func:`parse_where` reads a template once (structure errors raise :class:`WhereError`);
:meth:`WhereTemplate.render` fills it, refusing a value that does not fit its place.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum
from string import Formatter
from typing import Any, Mapping

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\Z")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_PATTERN_OPS = {"like", "glob", "match", "regexp", "escape"}
_PATTERN_ENDS = {"and", "or", "then", "else", "when", "end"}  # a pattern operand stops at these
_CLOSE = {"'": "'", '"': '"', "`": "`", "[": "]"}


class WhereError(ValueError):
    """A where template, or a value for one of its parameters, could change the clause's SQL."""


class Place(Enum):
    """Where a placeholder stands in the SQL, which decides how its value is written."""

    text = "inside a string literal"
    number = "outside any literal"


@dataclass(frozen=True)
class Slot:
    name: str
    spec: str
    place: Place

    def render(self, value: Any) -> str:
        """The SQL text for ``value`` at this place; raises WhereError when it does not fit."""
        if self.place is Place.text:
            text = format(value, self.spec)
            if "\0" in text:
                raise WhereError(f"{{{self.name}}}: a NUL character cannot reach the phone")
            return text.replace("'", "''")
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, float)):
            raise WhereError(f"{{{self.name}}} stands outside a quoted literal, where only a number is data, "
                             f"but its value {value!r} is not a number; write '{{{self.name}}}' to compare as text")
        if isinstance(value, float) and not math.isfinite(value):
            raise WhereError(f"{{{self.name}}} is {value!r}, which SQL cannot compare")
        text = format(value, self.spec) if self.spec else (repr(value) if isinstance(value, float) else str(value))
        if not _NUMBER.match(text):
            raise WhereError(f"{{{self.name}:{self.spec}}} does not render {value!r} as a number ({text!r})")
        # (-5), not -5: after a minus in the template (`amount=-{amount}`) a bare `--5` starts a comment
        return f"({text})" if text[0] in "+-" else text


@dataclass(frozen=True)
class WhereTemplate:
    pieces: tuple[str | Slot, ...]

    @property
    def slots(self) -> tuple[Slot, ...]:
        return tuple(p for p in self.pieces if isinstance(p, Slot))

    def render(self, values: Mapping[str, Any]) -> str:
        out = []
        for piece in self.pieces:
            if isinstance(piece, str):
                out.append(piece)
            elif piece.name not in values:
                raise WhereError(f"no parameter {piece.name!r}")
            else:
                out.append(piece.render(values[piece.name]))
        return "".join(out)


def _chunks(template: str) -> list[str | tuple[str, str, str | None]]:
    """Text and placeholders in order, adjacent text merged (``{{`` splits Formatter's text)."""
    try:
        parsed = list(Formatter().parse(template))
    except ValueError as exc:
        raise WhereError(f"bad placeholder: {exc}") from None
    out: list[str | tuple[str, str, str | None]] = []
    for text, field, spec, conversion in parsed:
        if text:
            if out and isinstance(out[-1], str):
                out[-1] += text
            else:
                out.append(text)
        if field is not None:
            out.append((field, spec or "", conversion))
    return out


class _Scanner:
    """Follows SQL's lexical state through the template's text: code, a quoted token, a comment,
    and whether the code is a pattern operand of LIKE and its kin."""

    def __init__(self) -> None:
        self.quote: str | None = None  # the opening character of the quoted token we are in
        self.comment: str | None = None  # "--" or "/*"
        self.depth = 0
        self.pattern: tuple[str, int] | None = None  # (operator, paren depth) while in its operand

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            ch, nxt = text[i], text[i + 1 : i + 2]
            if self.comment == "--":
                self.comment = None if ch == "\n" else self.comment
            elif self.comment == "/*":
                if ch == "*" and nxt == "/":
                    self.comment, i = None, i + 1
            elif self.quote is not None:
                close = _CLOSE[self.quote]
                if ch == close:
                    if nxt == close and close != "]":  # '' inside '...' (and "" in "...") is one quote
                        i += 1
                    else:
                        self.quote = None
            elif ch in _CLOSE:
                self.quote = ch
            elif ch == "-" and nxt == "-" or ch == "/" and nxt == "*":
                self.comment, i = ch + nxt, i + 1
            elif ch == "(":
                self.depth += 1
            elif ch == ")":
                self.depth -= 1
                if self.pattern is not None and self.depth < self.pattern[1]:
                    self.pattern = None
            elif ch == "," and self.pattern is not None and self.depth == self.pattern[1]:
                self.pattern = None
            elif (word := _WORD.match(text, i)) is not None and (i == 0 or not text[i - 1].isalnum()):
                self._word(word.group().lower())
                i = word.end() - 1
            i += 1

    def _word(self, word: str) -> None:
        if word in _PATTERN_OPS:
            self.pattern = (word.upper(), self.depth)
        elif word in _PATTERN_ENDS and self.pattern is not None and self.depth == self.pattern[1]:
            self.pattern = None

    def place(self, name: str) -> Place:
        """The place of a placeholder at the current point; raises where none is safe."""
        if self.comment is not None:
            raise WhereError(f"{{{name}}} is inside an SQL comment, where a newline in its value would end it")
        if self.quote in ('"', "`", "["):
            raise WhereError(f"{{{name}}} is inside a quoted identifier ({self.quote}...); "
                             f"a parameter is a value: write '{{{name}}}' for text")
        if self.pattern is not None:
            raise WhereError(f"{{{name}}} is in the pattern of {self.pattern[0]}, where a % or _ in its value "
                             f"would match other rows; compare with = '{{{name}}}' or use instr(column, '{{{name}}}') > 0")
        return Place.text if self.quote == "'" else Place.number


def parse_where(template: str) -> WhereTemplate:
    """Read a where template; raises WhereError when a placeholder stands where a value could
    change the clause, or the template leaves a literal or comment open."""
    scanner = _Scanner()
    pieces: list[str | Slot] = []
    for chunk in _chunks(template):
        if isinstance(chunk, str):
            scanner.feed(chunk)
            pieces.append(chunk)
            continue
        name, spec, conversion = chunk
        if not _NAME.match(name) or conversion is not None or "{" in spec:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise WhereError(f"{{{shown}}}: a where placeholder is a parameter name, optionally with a format spec")
        pieces.append(Slot(name, spec, scanner.place(name)))
    if scanner.quote is not None:
        raise WhereError(f"a {scanner.quote}...{_CLOSE[scanner.quote]} is never closed")
    if scanner.comment == "/*":
        raise WhereError("a /* comment is never closed")
    return WhereTemplate(tuple(pieces))

