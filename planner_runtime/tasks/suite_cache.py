"""The built-in suite, validated once per content: a pickle in the cache folder, keyed by a digest
of everything its validation reads.

Validating the built-in tasks (templates, world rows, every demo against every tool's schema)
takes seconds, and every ``planner-agent`` command that names a task pays it. The digest covers
the suite files, the simulated families, the skills (their composites are tools a demo may call)
and the code that validates them (the size and modification time of every module of ``tasks`` and
``harness``), so any change to them validates afresh. A cache file that cannot be read or
unpickled is ignored and written again; one that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from planner_runtime.config import Settings

T = TypeVar("T")
_PACKAGE = Path(__file__).resolve().parents[1]
_FORMAT = b"suite-cache-1"


def digest(data_files: list[Path]) -> str:
    """A digest of ``data_files``' bytes and of the validating code's sizes and times."""
    h = hashlib.sha256(_FORMAT)
    for path in sorted(data_files):
        h.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    for folder in (_PACKAGE / "tasks", _PACKAGE / "harness"):
        for module in sorted(folder.rglob("*.py")):
            stat = module.stat()
            h.update(f"{module}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:24]


def cached(name: str, data_files: list[Path], build: Callable[[], T]) -> T:
    """``build()``'s result, from ``<cache>/suites/<name>-<digest>.pickle`` when it is there."""
    try:
        path = Settings.read("cache_dir") / "suites" / f"{name}-{digest(data_files)}.pickle"
    except OSError:
        return build()
    try:
        return pickle.loads(path.read_bytes())  # noqa: S301 - the user's own cache, written below
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        pass
    value = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".partial")
        with os.fdopen(fd, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
    except OSError:
        pass
    return value
