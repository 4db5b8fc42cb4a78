"""Rows from Android content providers as tools ask for and show them: a value quoted for a
``--where`` clause, and pages of a list or a text (what a tool shows of how many, and how to get
the rest).

A tool that shows part of something says so in ``more``, with the ``offset`` that reads on, so a
planner never takes the first page for the whole and can always reach the last item.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def sql_text(value: str) -> str:
    """``value`` as an SQL string literal, for a content provider's ``--where``."""
    return "'" + value.replace("'", "''") + "'"


def page(items: Sequence[T], offset: int, limit: int, noun: str) -> tuple[list[T], dict[str, object]]:
    """Items ``offset`` to ``offset + limit`` and what to tell about the rest: ``total``, and
    ``more`` (with the next offset) when some come after the page."""
    shown = list(items[offset:offset + limit])
    info: dict[str, object] = {"total": len(items)}
    end = offset + len(shown)
    if end < len(items):
        info["more"] = f"showing {noun} {offset + 1}-{end} of {len(items)}; call again with offset={end} for the next ones"
    elif offset and offset >= len(items):
        info["more"] = f"offset={offset} is past the end: there are {len(items)} {noun}"
    return shown, info


def text_page(text: str, offset: int, length: int) -> dict[str, object]:
    """Characters ``offset`` to ``offset + length`` of ``text``, its ``size``, and ``more`` when cut."""
    shown = text[offset:offset + length]
    info: dict[str, object] = {"text": shown, "size": len(text), "offset": offset}
    end = offset + len(shown)
    if end < len(text):
        info["more"] = f"showing characters {offset}-{end} of {len(text)}; call again with offset={end} to read on"
    return info
