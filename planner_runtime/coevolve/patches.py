"""Unified diffs in pure Python: write one between two texts, read one back, apply it to a text.

A proposal carries its change as a unified diff of one file (the format ``diff -u`` and
``git diff`` write, ``\\ No newline at end of file`` included), so a person reads exactly what
would change and a round applies exactly that. :func:`apply_diff` is strict: every hunk's
context and removed lines must be found as written (a few lines above or below the stated place
is fine, as ``patch`` allows; no fuzz), else :class:`PatchError` says which hunk and why. A diff
from ``/dev/null`` creates a file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from planner_runtime.coevolve import CoevolveError

NO_NEWLINE = "\\ No newline at end of file"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_OFFSET = 50  # how far from its stated line a hunk may be found


class PatchError(CoevolveError):
    """A diff that cannot be read, or does not apply to the text it is given."""


@dataclass(frozen=True)
class Hunk:
    old_start: int  # 1-based; for an empty old side, the line after which the new lines go
    old_len: int
    lines: tuple[tuple[str, str], ...]  # (" " | "-" | "+", the line with its newline, if it has one)

    @property
    def old(self) -> list[str]:
        return [text for tag, text in self.lines if tag in " -"]

    @property
    def new(self) -> list[str]:
        return [text for tag, text in self.lines if tag in " +"]


@dataclass(frozen=True)
class FileDiff:
    old_path: str  # as the header names it, without a/ ("/dev/null": a new file)
    new_path: str
    hunks: tuple[Hunk, ...]

    @property
    def creates(self) -> bool:
        return self.old_path == "/dev/null"


def make_diff(old: str, new: str, path: str, *, create: bool = False) -> str:
    """The unified diff (3 lines of context) turning ``old`` into ``new``, headers naming
    ``a/path`` and ``b/path`` (``/dev/null`` as the old side when ``create``); "" when equal."""
    if old == new:
        return ""
    out = []
    for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     fromfile="/dev/null" if create else f"a/{path}", tofile=f"b/{path}", n=3):
        if line.startswith(("---", "+++", "@@")):
            out.append(line if line.endswith("\n") else line + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


def _path(header: str) -> str:
    name = header[4:].split("\t", 1)[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(diff: str) -> FileDiff:
    """The one file's diff in ``diff``; raises :class:`PatchError` for anything else."""
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines) and not lines[i].startswith("--- "):
        i += 1  # "diff --git" and index lines may come first
    if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
        raise PatchError("no '--- a/FILE' and '+++ b/FILE' header lines")
    old_path, new_path = _path(lines[i]), _path(lines[i + 1])
    i += 2
    hunks = []
    while i < len(lines):
        head = _HUNK.match(lines[i])
        if head is None:
            if lines[i].startswith("--- "):
                raise PatchError("the diff touches more than one file")
            raise PatchError(f"line {i + 1}: expected a hunk header '@@ -L,N +L,N @@', got {lines[i][:60]!r}")
        old_start, old_len = int(head[1]), int(head[2] if head[2] is not None else 1)
        new_len = int(head[4] if head[4] is not None else 1)
        i += 1
        body: list[tuple[str, str]] = []
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            if line.startswith("\\"):
                if not body:
                    raise PatchError(f"line {i + 1}: '{NO_NEWLINE}' follows no line")
                tag, text = body[-1]
                body[-1] = (tag, text.removesuffix("\n"))
            elif line[:1] in (" ", "-", "+"):
                if line.startswith("--- ") and sum(1 for t, _ in body if t in " -") >= old_len:
                    break  # the next file's header
                body.append((line[0], line[1:]))
            elif line in ("\n", ""):
                body.append((" ", "\n"))  # an empty context line whose space was stripped
            else:
                raise PatchError(f"line {i + 1}: a hunk line must start with ' ', '-' or '+', got {line[:60]!r}")
            i += 1
        hunk = Hunk(old_start, old_len, tuple(body))
        if len(hunk.old) != old_len or len(hunk.new) != new_len:
            raise PatchError(f"hunk {len(hunks) + 1} (at line {old_start}): its header says -{old_len} +{new_len} lines, "
                             f"its body has -{len(hunk.old)} +{len(hunk.new)}")
        hunks.append(hunk)
    if not hunks:
        raise PatchError("the diff has no hunks")
    return FileDiff(old_path, new_path, tuple(hunks))


def _find(source: list[str], want: list[str], stated: int, floor: int) -> int | None:
    """Where ``want`` starts in ``source`` nearest ``stated``, at or after ``floor``."""
    for offset in range(MAX_OFFSET + 1):
        for at in ((stated,) if offset == 0 else (stated - offset, stated + offset)):
            if floor <= at <= len(source) - len(want) and source[at:at + len(want)] == want:
                return at
    return None


def apply_diff(diff: str | FileDiff, text: str | None) -> str:
    """``text`` with ``diff`` applied (``text`` None: the file does not exist, which only a
    diff creating it accepts). Raises :class:`PatchError` naming the hunk that does not fit."""
    parsed = parse_diff(diff) if isinstance(diff, str) else diff
    if parsed.creates and text:
        raise PatchError(f"the diff creates {parsed.new_path}, which exists already")
    if text is None and not parsed.creates:
        raise PatchError(f"{parsed.old_path} does not exist")
    source = (text or "").splitlines(keepends=True)
    out: list[str] = []
    done = 0  # lines of source consumed so far
    for n, hunk in enumerate(parsed.hunks, start=1):
        old = hunk.old
        stated = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        at = _find(source, old, stated, done)
        if at is None:
            raise PatchError(f"hunk {n} (at line {hunk.old_start}) does not match the file: its context or removed "
                             "lines differ (the file changed since the diff was made)")
        out += source[done:at] + hunk.new
        done = at + len(old)
    out += source[done:]
    return "".join(out)
