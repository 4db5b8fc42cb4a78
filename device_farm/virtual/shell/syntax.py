"""Shell syntax of the virtual phone: tokens, words with deferred `$` expansion, simple
commands, pipelines and `;`/`&&`/`||` lists.

Supports single and double quotes, backslash escapes, `$?`, `$VAR`, `${VAR}`, the positional
`$0`..`$9`, `$#`, `$@` and `$*` (joined by spaces, never split into words), `NAME=value`
prefixes, the redirections `>`, `>>`, `2>`, `2>&1`, `<`, and arithmetic `$((EXPR))` (see
`arith`). Expansion happens when a command runs, so `false; echo $?` sees the new status; an
expression that cannot parse is a syntax error of the line, one that cannot evaluate (division
by zero) an ExpansionError when it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from device_farm.virtual.shell import arith

OPERATORS = ("&&", "||", ">>", "2>&1", "2>", ";", "|", ">", "<", "&")


class ShellSyntaxError(ValueError):
    """The command line does not parse."""


class ExpansionError(ShellSyntaxError):
    """A word cannot be expanded (`$((1/0))`): the line stops with status 1."""


_ARITH_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+|[?#$!@*])")


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Arith:
    """`$((expr))`: ``expr`` as written, its `$NAME`s expanded when the word is."""

    expr: str

    def value(self, env: dict[str, str]) -> str:
        text = _ARITH_VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), self.expr)
        try:
            return str(arith.evaluate(text, env))
        except arith.ArithError as exc:
            raise ExpansionError(str(exc)) from None


@dataclass(frozen=True)
class Word:
    parts: tuple[Union[str, Var, Arith], ...]

    def expand(self, env: dict[str, str]) -> str:
        return "".join(p if isinstance(p, str) else p.value(env) if isinstance(p, Arith) else env.get(p.name, "")
                       for p in self.parts)


@dataclass
class SimpleCommand:
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word | None]] = field(default_factory=list)


Pipeline = list[SimpleCommand]
CommandList = list[tuple[str, Pipeline]]  # (connector before it: ";", "&&", "||"), pipeline


def tokenize(line: str) -> list[Union[Word, str]]:
    """Split a command line into Words and operator strings."""
    tokens: list[Union[Word, str]] = []
    parts: list[Union[str, Var, Arith]] = []
    buf: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def flush_buf() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    def end_word() -> None:
        nonlocal in_word
        flush_buf()
        if in_word:
            tokens.append(Word(tuple(parts)))
        parts.clear()
        in_word = False

    def read_var(j: int) -> tuple[Var | None, int]:
        if j < n and line[j] == "{":
            close = line.find("}", j)
            if close < 0:
                raise ShellSyntaxError("bad substitution")
            return Var(line[j + 1 : close]), close + 1
        if j < n and line[j] in "?$#!@*0123456789":
            return Var(line[j]), j + 1
        k = j
        while k < n and (line[k].isalnum() or line[k] == "_"):
            k += 1
        return (Var(line[j:k]), k) if k > j else (None, j)

    def arithmetic(j: int) -> int:
        """Take the ``$((`` at ``j`` up to its ``))``; return where to go on."""
        depth, k = 0, j + 3
        while k < n:
            if line[k] == "(":
                depth += 1
            elif line[k] == ")":
                if depth == 0:
                    if not line.startswith("))", k):
                        raise ShellSyntaxError("syntax error: ')' unexpected in $((...))")
                    expr = line[j + 3 : k]
                    try:
                        arith.check(expr)
                    except arith.ArithError as exc:
                        raise ShellSyntaxError(str(exc)) from None
                    flush_buf()
                    parts.append(Arith(expr))
                    return k + 2
                depth -= 1
            k += 1
        raise ShellSyntaxError("syntax error: unterminated $((")

    def dollar(j: int) -> int:
        """Take the ``$`` at ``j`` (a variable, arithmetic, or a literal ``$``); return where to go on."""
        if line.startswith("$((", j):
            return arithmetic(j)
        var, after = read_var(j + 1)
        if var is None:
            buf.append("$")
            return j + 1
        flush_buf()
        parts.append(var)
        return after

    while i < n:
        c = line[i]
        if c in " \t\n":
            end_word()
            i += 1
        elif c == "#" and not in_word:
            break
        elif c == "\\":
            in_word = True
            if i + 1 < n:
                buf.append(line[i + 1])
            i += 2
        elif c == "'":
            in_word = True
            close = line.find("'", i + 1)
            if close < 0:
                raise ShellSyntaxError("unterminated single quote")
            buf.append(line[i + 1 : close])
            i = close + 1
        elif c == '"':
            in_word = True
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    buf.append(line[i + 1])
                    i += 2
                elif line[i] == "$":
                    i = dollar(i)
                else:
                    buf.append(line[i])
                    i += 1
            if i >= n:
                raise ShellSyntaxError("unterminated double quote")
            i += 1
        elif c == "$":
            in_word = True
            i = dollar(i)
        else:
            op = next((o for o in OPERATORS if line.startswith(o, i)), None)
            if op is not None and op.startswith("2") and (in_word or (i > 0 and line[i - 1] not in " \t")):
                op = None
            if op is not None:
                end_word()
                tokens.append(op)
                i += len(op)
            else:
                in_word = True
                buf.append(c)
                i += 1
    end_word()
    return tokens


def parse(line: str) -> CommandList:
    """Parse into pipelines joined by ;, && and ||."""
    result: CommandList = []
    connector = ";"
    pipeline: Pipeline = []
    cmd = SimpleCommand()
    tokens = tokenize(line)
    i = 0

    def finish_command() -> None:
        nonlocal cmd
        if not cmd.words and not cmd.assignments and not cmd.redirects:
            raise ShellSyntaxError("syntax error: unexpected operator")
        pipeline.append(cmd)
        cmd = SimpleCommand()

    while i < len(tokens):
        tok = tokens[i]
        if isinstance(tok, Word):
            text = tok.parts[0] if tok.parts and isinstance(tok.parts[0], str) else ""
            name, eq, _ = text.partition("=")
            if not cmd.words and eq and name.isidentifier():
                rest = (text[len(name) + 1 :],) + tok.parts[1:]
                cmd.assignments.append((name, Word(tuple(p for p in rest if p != ""))))
            else:
                cmd.words.append(tok)
        elif tok in (">", ">>", "2>", "<"):
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if not isinstance(target, Word):
                raise ShellSyntaxError(f"syntax error: '{tok}' needs a file")
            cmd.redirects.append((tok, target))
            i += 1
        elif tok == "2>&1":
            cmd.redirects.append((tok, None))
        elif tok == "|":
            finish_command()
        elif tok in (";", "&&", "||", "&"):
            if not cmd.words and not cmd.assignments and not pipeline and tok in (";", "&"):
                i += 1
                continue
            finish_command()
            result.append((connector, pipeline))
            pipeline = []
            connector = ";" if tok == "&" else tok
        i += 1
    if cmd.words or cmd.assignments or cmd.redirects:
        finish_command()
    if pipeline:
        result.append((connector, pipeline))
    elif connector in ("&&", "||"):
        raise ShellSyntaxError(f"syntax error: unexpected end after '{connector}'")
    return result
