"""A harness revision: the harness's instructions to the planner, kept as files a person reviews.

Co-evolution revises the harness's words, never its code: the system prompt, the tools'
descriptions and the skills. A revision is a folder that holds any of

- ``system_prompt.txt``: replaces the built-in system prompt (:data:`episode.SYSTEM_PROMPT`);
- ``tool_descriptions.yaml``: ``tool name: description`` for the tools whose description changes;
- ``skills/<name>/SKILL.md``: the skills, replacing the built-in folder when present;

and ``$PLANNER_AGENT_HARNESS_DIR`` names the one in use (unset: the one a person promoted at
the end of a round, :func:`promote`, else the built-in instructions).
:func:`planner_runtime.harness.revision.files.export_current` writes the instructions in use out
as such a folder, which is what a round's proposals are diffs against. Every episode records which instructions it read: its
harness release is ``harness-<version>`` with ``+<digest>`` of the revision's files appended, so
data from a revision is never mistaken for data from the built-in harness.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from planner_runtime import HARNESS_RELEASE
from planner_runtime.config import Settings
from planner_runtime.errors import ConfigError
from planner_runtime.yaml_lines import line_of

SYSTEM_PROMPT_FILE = "system_prompt.txt"
TOOL_DESCRIPTIONS_FILE = "tool_descriptions.yaml"
SKILLS_FOLDER = "skills"
MAX_TEXT = 20_000  # characters of one instruction: more is a mistake (or an attack on the prompt's budget)


@dataclass(frozen=True)
class HarnessRevision:
    """The instructions a revision folder replaces; ``None``/empty: the built-in ones stand."""

    path: Path | None = None
    system_prompt: str | None = None
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    skills_dir: Path | None = None
    digest: str = ""

    @property
    def release(self) -> str:
        """The harness release an episode under this revision records."""
        return f"{HARNESS_RELEASE}+{self.digest[:12]}" if self.digest else HARNESS_RELEASE


BUILTIN = HarnessRevision()


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc


def _descriptions(path: Path) -> dict[str, str]:
    text = _text(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"{path}:{mark.line + 1 if mark else 1}: not YAML ({str(exc).splitlines()[0]})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: a mapping of tool name to description, got a {type(data).__name__}")
    out = {}
    for name, description in data.items():
        line = line_of(node, [name]) or 1
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{path}:{line}: a tool name must be a non-empty string, got {name!r}")
        if not isinstance(description, str) or not description.strip():
            raise ConfigError(f"{path}:{line}: {name}: the description must be non-empty text")
        if len(description) > MAX_TEXT:
            raise ConfigError(f"{path}:{line}: {name}: the description has {len(description)} characters (at most {MAX_TEXT})")
        out[name] = " ".join(description.split())
    return out


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative == SYSTEM_PROMPT_FILE or relative == TOOL_DESCRIPTIONS_FILE or relative.startswith(SKILLS_FOLDER + "/"):
            h.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def load_revision(path: Path) -> HarnessRevision:
    """The revision in folder ``path``; an unreadable or malformed file is a ConfigError naming it."""
    if not path.is_dir():
        raise ConfigError(f"harness revision {path}: no such folder")
    prompt = None
    if (path / SYSTEM_PROMPT_FILE).is_file():
        prompt = _text(path / SYSTEM_PROMPT_FILE).strip()
        if not prompt:
            raise ConfigError(f"{path / SYSTEM_PROMPT_FILE}: empty (delete the file to keep the built-in prompt)")
        if len(prompt) > MAX_TEXT:
            raise ConfigError(f"{path / SYSTEM_PROMPT_FILE}: {len(prompt)} characters (at most {MAX_TEXT})")
    described = _descriptions(path / TOOL_DESCRIPTIONS_FILE) if (path / TOOL_DESCRIPTIONS_FILE).is_file() else {}
    skills = path / SKILLS_FOLDER if (path / SKILLS_FOLDER).is_dir() else None
    return HarnessRevision(path.resolve(), prompt, described, skills, _digest(path))


@functools.lru_cache(maxsize=8)
def _cached(path: Path, stamp: tuple[int, ...]) -> HarnessRevision:
    return load_revision(path)


def _stamp(path: Path) -> tuple[int, ...]:
    return tuple(p.stat().st_mtime_ns for p in sorted(path.rglob("*")) if p.is_file()) if path.is_dir() else ()


PROMOTED_FILE = "promoted"  # in $PLANNER_AGENT_HOME/harness/: the path of the revision a person promoted


def promoted_path(home: Path) -> Path:
    return home / "harness" / PROMOTED_FILE


def promoted(home: Path) -> Path | None:
    """The revision folder a person promoted (a round's final approval), if any."""
    try:
        text = promoted_path(home).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{promoted_path(home)}: cannot be read ({exc})") from exc
    return Path(text) if text else None


def promote(home: Path, revision: Path) -> None:
    """Make ``revision`` the harness every episode reads when ``$PLANNER_AGENT_HARNESS_DIR`` is unset."""
    load_revision(revision)  # refuses a broken folder before anything changes
    path = promoted_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(str(revision.resolve()) + "\n", encoding="utf-8")
    partial.replace(path)


def current() -> HarnessRevision:
    """The revision ``$PLANNER_AGENT_HARNESS_DIR`` names, else the one a person promoted, else the
    built-in instructions; a folder is read again only when its files change."""
    chosen = _setting("harness_dir", Settings.raw("harness_dir")) or promoted(_setting("home", Settings.raw("home")))
    if chosen is None:
        return BUILTIN
    return _cached(Path(chosen), _stamp(Path(chosen)))


@functools.lru_cache(maxsize=16)
def _setting(field: str, raw: str | None) -> Path | None:
    """``Settings.read(field)``, once per value of its variable (every tool list asks)."""
    return Settings.read(field)


def unknown_tools(revision: HarnessRevision, known: set[str]) -> list[str]:
    """Names in the revision's tool descriptions that no tool of the catalogue has."""
    return sorted(set(revision.tool_descriptions) - known)


def export_revision(dest: Path, *, system_prompt: str, descriptions: dict[str, str], skills_dir: Path) -> Path:
    """Write instructions out as a revision folder at ``dest`` (which must not exist): the
    starting point a round's proposals are diffs against."""
    if dest.exists():
        raise ConfigError(f"{dest}: already exists; a revision is written to a new folder")
    dest.mkdir(parents=True)
    (dest / SYSTEM_PROMPT_FILE).write_text(system_prompt.strip() + "\n", encoding="utf-8")
    (dest / TOOL_DESCRIPTIONS_FILE).write_text(
        yaml.safe_dump(dict(sorted(descriptions.items())), allow_unicode=True, sort_keys=False, width=100), encoding="utf-8")
    shutil.copytree(skills_dir, dest / SKILLS_FOLDER, ignore=shutil.ignore_patterns("__pycache__"))
    return dest

