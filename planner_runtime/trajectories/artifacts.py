"""Content-addressed artifacts (screenshots and other binary evidence) beside the trajectories.

An artifact is stored once under ``<PLANNER_AGENT_HOME>/artifacts/<sha256[:2]>/<sha256>.<ext>``
and referred to by ``<sha256>.<ext>`` — the reference that trajectories keep (for instance in
``Observation.screenshot``). The same bytes always give the same reference, so a screen seen a
thousand times costs one file. This module is the one place that turns bytes into references
and references back into files; the trajectory viewer serves artifacts through it.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from planner_runtime.errors import StoreError

_REF = re.compile(r"^([0-9a-f]{64})\.([a-z0-9]{1,8})$")
MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "json": "application/json", "xml": "application/xml", "txt": "text/plain"}


@dataclass(frozen=True)
class ArtifactStore:
    """Artifacts under ``root`` (nothing is touched until :meth:`put`)."""

    root: Path

    @classmethod
    def default(cls) -> ArtifactStore:
        """The store under the configured ``PLANNER_AGENT_HOME``."""
        from planner_runtime.config import Settings

        return cls(Settings.from_env().home / "artifacts")

    def put(self, data: bytes, ext: str = "png") -> str:
        """Store ``data`` (once) and return its reference."""
        digest = hashlib.sha256(data).hexdigest()
        ref = f"{digest}.{ext}"
        if not _REF.fullmatch(ref):
            raise StoreError(f"bad artifact extension {ext!r}")
        path = self.path(ref)
        if path.exists():
            return ref
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a file, and two writers of the same
        # bytes both end with the same complete file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return ref

    def path(self, ref: str) -> Path:
        """Where the artifact ``ref`` lives (whether or not it exists); refuses anything that is
        not a reference, so a reference from a request can never name another file."""
        match = _REF.fullmatch(ref)
        if match is None:
            raise StoreError(f"not an artifact reference: {ref!r}")
        digest = match.group(1)
        return self.root / digest[:2] / ref

    def get(self, ref: str) -> bytes:
        path = self.path(ref)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise StoreError(f"no artifact {ref} under {self.root}") from exc

    def __contains__(self, ref: str) -> bool:
        return _REF.fullmatch(ref) is not None and self.path(ref).exists()

    @staticmethod
    def media_type(ref: str) -> str:
        return MEDIA_TYPES.get(ref.rsplit(".", 1)[-1], "application/octet-stream")


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, or None when ``data`` is not a PNG."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
