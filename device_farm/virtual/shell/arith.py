"""Shell arithmetic, `$((EXPR))` as mksh evaluates it: 64-bit integers in decimal, `0x` hex
and leading-`0` octal, variables by name (`x`, or `$x` expanded first; unset or empty is 0),
unary `+ - ! ~`, `* / %`, `+ -`, shifts, comparisons, `& ^ |`, `&& ||` and parentheses.
Assignments, `++`/`--` and `?:` are not supported and are syntax errors, as are division by
zero and a variable whose value is not a number.
"""

from __future__ import annotations

import re
from typing import Mapping

_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&^|])")
_BINARY: tuple[tuple[str, ...], ...] = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
    ("+", "-"), ("*", "/", "%"),
)
_MASK = (1 << 64) - 1


class ArithError(ValueError):
    """The expression does not evaluate; the message is mksh's (`1+: unexpected end of expression`)."""


def _wrap(value: int) -> int:
    """Two's complement 64-bit, as mksh's arithmetic overflows."""
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


def _literal(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text, 16)
    if len(text) > 1 and text[0] == "0":
        if not set(text) <= set("01234567"):
            raise ValueError(text)
        return int(text, 8)
    return int(text)


class _Parser:
    def __init__(self, text: str, env: Mapping[str, str], depth: int) -> None:
        self.text, self.env, self.depth = text, env, depth
        self.tokens: list[str] = []
        at = 0
        while at < len(text):
            m = _TOKEN.match(text, at)
            if m is None:
                if text[at:].strip():
                    raise ArithError(f"{text}: unexpected '{text[at:].strip()[0]}'")
                break
            self.tokens.append(m.group(1))
            at = m.end()
        self.i = 0

    def error(self) -> ArithError:
        if self.i >= len(self.tokens):
            return ArithError(f"{self.text}: unexpected end of expression")
        return ArithError(f"{self.text}: unexpected '{self.tokens[self.i]}'")

    def take(self, *ops: str) -> str | None:
        if self.i < len(self.tokens) and self.tokens[self.i] in ops:
            self.i += 1
            return self.tokens[self.i - 1]
        return None

    def binary(self, level: int = 0) -> int:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while (op := self.take(*_BINARY[level])) is not None:
            right = self.binary(level + 1)
            left = _wrap(self.apply(op, left, right))
        return left

    def apply(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%"):
            if b == 0:
                raise ArithError(f"{self.text}: divisor by zero")
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C division truncates
            return q if op == "/" else a - q * b
        if op in ("<<", ">>"):
            return a << (b & 63) if op == "<<" else a >> (b & 63)
        return {
            "||": lambda: int(bool(a or b)), "&&": lambda: int(bool(a and b)), "|": lambda: a | b,
            "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b), "!=": lambda: int(a != b),
            "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
            ">=": lambda: int(a >= b), "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        }[op]()

    def unary(self) -> int:
        op = self.take("+", "-", "!", "~")
        if op is not None:
            value = self.unary()
            return _wrap({"+": value, "-": -value, "!": int(not value), "~": ~value}[op])
        if self.take("("):
            value = self.binary()
            if not self.take(")"):
                raise self.error()
            return value
        if self.i >= len(self.tokens):
            raise self.error()
        token = self.tokens[self.i]
        self.i += 1
        if token[0].isdigit():
            try:
                return _wrap(_literal(token))
            except ValueError:
                raise ArithError(f"{self.text}: bad number '{token}'") from None
        if token[0].isalpha() or token[0] == "_":
            return self.variable(token)
        self.i -= 1
        raise self.error()

    def variable(self, name: str) -> int:
        value = self.env.get(name, "").strip()
        if not value:
            return 0
        if self.depth >= 8:  # x=x: mksh stops the recursion too
            raise ArithError(f"{name}: expression recurses on parameter")
        return evaluate(value, self.env, self.depth + 1)


def evaluate(text: str, env: Mapping[str, str], depth: int = 0) -> int:
    """The value of the expression ``text`` (its `$` expansions already done)."""
    parser = _Parser(text, env, depth)
    if not parser.tokens:
        return 0  # $(( )) is 0
    value = parser.binary()
    if parser.i != len(parser.tokens):
        raise parser.error()
    return value


def check(text: str) -> None:
    """Raise for an expression that cannot parse whatever its variables hold (checked when the
    line is read: `$((1+))`); only division by zero and bad values wait for evaluation."""
    names = {m for m in re.findall(r"[A-Za-z_]\w*", text)}
    try:
        evaluate(re.sub(r"\$\{?\w+\}?|\$[?#$!@*]", "1", text), {n: "1" for n in names})
    except ArithError as exc:
        if "divisor by zero" not in str(exc):
            raise
