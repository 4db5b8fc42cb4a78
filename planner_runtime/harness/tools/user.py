"""Where the answers to ``ask_user`` (:mod:`planner_runtime.harness.tools.core`) come from.

The caller chooses, giving an :data:`Answerer` (question in, answer or ``None`` out): the prompt
of ``planner-agent run`` at a terminal, a file of scripted answers (``--answers FILE``: question
pattern → answer), a task's ``user_answers``, or nobody — then the planner is told no user is
available and must go on without one. :func:`chain` tries several sources in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import yaml

from planner_runtime.errors import ConfigError

Answerer = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ScriptedAnswers:
    """Answers chosen by the first pattern (a case-insensitive regular expression, searched in
    the question) that matches; a question no pattern matches gets ``None``."""

    rules: tuple[tuple[re.Pattern[str], str], ...]

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object], where: str = "answers") -> ScriptedAnswers:
        rules = []
        for pattern, answer in mapping.items():
            try:
                rules.append((re.compile(str(pattern), re.IGNORECASE), str(answer)))
            except re.error as exc:
                raise ConfigError(f"{where}: bad question pattern {pattern!r}: {exc}") from exc
        return cls(tuple(rules))

    @classmethod
    def load(cls, path: Path) -> ScriptedAnswers:
        """A YAML mapping of question pattern → answer (text); anything else is a
        :class:`ConfigError` naming the file."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not YAML: {' '.join(str(exc).split())}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of question pattern: answer (like 'which time': '7:30'), got a {type(data).__name__}")
        for pattern, answer in data.items():
            if isinstance(answer, (dict, list)) or answer is None:
                raise ConfigError(f"{path}: the answer to {pattern!r} must be text")
        return cls.from_mapping(data, str(path))

    def __call__(self, question: str) -> str | None:
        return next((answer for pattern, answer in self.rules if pattern.search(question)), None)


def chain(*sources: Answerer | None) -> Answerer | None:
    """The first answer any of ``sources`` gives (``None`` sources are skipped)."""
    present = [s for s in sources if s is not None]
    if not present:
        return None

    def ask(question: str) -> str | None:
        return next((a for a in (source(question) for source in present) if a is not None), None)

    return ask
