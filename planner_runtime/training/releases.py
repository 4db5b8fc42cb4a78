"""Releases: what a training run leaves, and the checks before anything loads one.

A release is a folder ``<PLANNER_AGENT_HOME>/releases/<name>/`` holding either a LoRA adapter
(``adapter_config.json``, ``adapter_model.safetensors``) or whole weights (``config.json`` and
``*.safetensors``), the tokenizer, and ``manifest.json`` (:class:`Manifest`): the base model and
a sha256 over its weight files, the data selection and the dataset's digest, the
hyperparameters, the prompt rendering it was trained on, the parent release, bench results and
the approval that promoted it. The manifest also holds a digest of the release's own weight
files, so a damaged adapter is refused before it is read.

``--planner local --release NAME`` loads :func:`model_dir`: a full release's own folder, or for
a LoRA the base with the adapter merged in, written once inside the release (``.merged/<name>``,
named after the release, so trajectories name the release they were planned by).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner_runtime.errors import ModelProvisionError
from planner_runtime.planners.chat_template import rendering_of
from planner_runtime.planners.local import model_store
from planner_runtime.planners.renderings import RENDERING_FILE, UnknownRendering
from planner_runtime.training import TrainingError

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BASE = "base"  # not a release: the untrained base model
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_DEFAULT = ".default"  # the promoted release's name (a dot file: never a release's name)
# Releases that ship inside the package (read-only): the default while no release is promoted.
BUILTIN_DIR = Path(__file__).with_name("builtin")
BUILTIN_DEFAULT = "embedded-sft"


class ReleaseError(TrainingError):
    """A release is missing, damaged, made by a newer version, or does not match its base."""


class BaseModelRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    spec: str  # as given: "embedded" or a path
    name: str
    sha256: str


class Approval(BaseModel):
    model_config = ConfigDict(frozen=True)

    by: str
    at: datetime


class Manifest(BaseModel):
    """``manifest.json`` of a release."""

    model_config = ConfigDict(frozen=True)

    format_version: int = FORMAT_VERSION
    name: str
    kind: Literal["lora", "full"]
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    base: BaseModelRef
    weights_sha256: str  # the release's own weight files (adapter or model)
    data: dict[str, Any]  # selection, dataset_sha256, trajectories, sequences, tokens, trained_tokens
    hyperparameters: dict[str, Any]
    rendering: str
    parent: str | None = None
    bench: tuple[dict[str, Any], ...] = ()
    approval: Approval | None = None


def releases_dir(home: Path) -> Path:
    return home / "releases"


def check_name(name: str) -> str:
    if name == BASE or not _NAME.match(name):
        raise ReleaseError(f"release name {name!r}: use letters, digits, '.', '_' or '-' (and not {BASE!r})")
    return name


def builtin_names() -> list[str]:
    """The releases shipped inside the package."""
    if not BUILTIN_DIR.is_dir():
        return []
    return sorted(p.name for p in BUILTIN_DIR.iterdir() if p.is_dir() and _NAME.match(p.name) and (p / MANIFEST).is_file())


def check_new_name(name: str) -> str:
    """A name a new release may take: valid, and not a shipped release's."""
    if check_name(name) in builtin_names():
        raise ReleaseError(f"release name {name!r} is a built-in release's: choose another --out")
    return name


def weights_sha256(folder: Path) -> str:
    """A sha256 over a model folder's weight files, names and bytes, in name order."""
    digest = hashlib.sha256()
    files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    if not files:
        raise ReleaseError(f"{folder}: no weight files")
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def parent_of(spec: str) -> str | None:
    """The release a base spec names (``release:NAME``: training goes on from it), else ``None``."""
    return spec.removeprefix("release:") if spec.startswith("release:") and spec != "release:" + BASE else None


def base_path(spec: str, home: Path, cache_dir: Path | None = None) -> Path:
    """The model folder a base spec names: an HF folder, ``embedded``, or ``release:NAME``."""
    if spec == "release:" + BASE:
        spec = "embedded"
    if (parent := parent_of(spec)) is not None:
        return model_dir(home, parent, cache_dir)
    try:
        return model_store.resolve_model_path(spec, cache_dir)
    except ModelProvisionError as exc:
        raise ReleaseError(f"base model: {exc}") from exc


def release_path(home: Path, name: str) -> Path:
    """Release ``name``'s folder: the shipped one for a built-in name, else under ``home``."""
    if check_name(name) in builtin_names():
        return BUILTIN_DIR / name
    return releases_dir(home) / name


def load_manifest(home: Path, name: str) -> Manifest:
    """The manifest of release ``name``; :class:`ReleaseError` for a missing, unreadable or newer one."""
    folder = release_path(home, name)
    path = folder / MANIFEST
    if not path.is_file():
        known = ", ".join(m.name for m in list_releases(home)) or "none"
        raise ReleaseError(f"no release {name!r} in {releases_dir(home)} (releases: {known})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"release {name!r}: {path} is not readable JSON ({exc})") from exc
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise ReleaseError(f"release {name!r} has manifest format {version}, newer than this planner-agent reads "
                           f"({FORMAT_VERSION}): upgrade planner-agent to use it")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise ReleaseError(f"release {name!r}: {path} is not a valid manifest ({exc.errors()[0]['msg']})") from exc


def list_releases(home: Path) -> list[Manifest]:
    """Every readable release, oldest first (a damaged one is skipped here; ``show`` names its fault)."""
    root = releases_dir(home)
    found = []
    shipped = builtin_names()  # one scan of the package folder, not one per release
    folders = [BUILTIN_DIR / name for name in shipped]
    folders += [f for f in sorted(root.iterdir()) if f.name not in shipped] if root.is_dir() else []
    for folder in folders:
        if folder.is_dir() and _NAME.match(folder.name) and (folder / MANIFEST).is_file():
            try:
                found.append(load_manifest(home, folder.name))
            except ReleaseError:
                continue
    return sorted(found, key=lambda m: m.created_at)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Replace ``folder``'s manifest whole (written beside it, then renamed)."""
    tmp = folder / (MANIFEST + ".part")
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / MANIFEST)


def check_weights(home: Path, manifest: Manifest) -> None:
    """A :class:`ReleaseError` when the release's weight files are not the ones its manifest names."""
    folder = release_path(home, manifest.name)
    if weights_sha256(folder) != manifest.weights_sha256:
        raise ReleaseError(f"release {manifest.name!r}: its weight files in {folder} do not match the manifest "
                           "(damaged or replaced); train it again or restore the folder")


def verify(home: Path, manifest: Manifest, cache_dir: Path | None = None) -> Path:
    """Check the release's files and its base against the manifest; returns the base's folder."""
    check_weights(home, manifest)
    rendering(manifest)
    base = base_path(manifest.base.spec, home, cache_dir)
    if manifest.kind == "lora" and weights_sha256(base) != manifest.base.sha256:
        raise ReleaseError(f"release {manifest.name!r} was trained on a base model with sha256 {manifest.base.sha256[:12]}, "
                           f"but {base} now has {weights_sha256(base)[:12]}: restore that base or train again")
    return base


def rendering(manifest: Manifest) -> str:
    """The prompt rendering the release was trained on; a :class:`ReleaseError` for one this
    version cannot write token for token."""
    try:
        return rendering_of(manifest.rendering)
    except UnknownRendering as exc:
        raise ReleaseError(f"release {manifest.name!r}: {exc}; use the planner-agent version that trained it") from None


def default_release(home: Path) -> str | None:
    """The promoted release's name; while none is promoted, the shipped default
    (:data:`BUILTIN_DEFAULT`); ``None`` when neither exists (the base model is the default)."""
    path = releases_dir(home) / _DEFAULT
    name = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
    return name or (BUILTIN_DEFAULT if BUILTIN_DEFAULT in builtin_names() else None)


def set_default(home: Path, name: str) -> None:
    releases_dir(home).mkdir(parents=True, exist_ok=True)
    path = releases_dir(home) / _DEFAULT
    tmp = path.with_name(_DEFAULT + ".part")
    tmp.write_text(name + "\n", encoding="utf-8")
    tmp.replace(path)


def _merge(base: Path, adapter: Path, out: Path) -> None:
    """Write ``base`` with the LoRA in ``adapter`` merged in as a plain HF model folder at ``out``."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    tmp = out.with_name(out.name + f".part-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with model_store.quiet_progress_bars():
            model = model_store.load_causal_lm(base)
            merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
            merged.save_pretrained(tmp)
            # a shipped adapter carries no tokenizer of its own: it is the base's
            own = (adapter / "tokenizer_config.json").is_file()
            AutoTokenizer.from_pretrained(adapter if own else base).save_pretrained(tmp)
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            shutil.rmtree(out)
        tmp.replace(out)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise ReleaseError(f"release {adapter.name!r}: cannot load its adapter onto {base} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def model_dir(home: Path, name: str, cache_dir: Path | None = None) -> Path:
    """A folder the local planner loads for release ``name`` (checked against its manifest first)."""
    manifest = load_manifest(home, name)
    base = verify(home, manifest, cache_dir)
    folder = release_path(home, name)
    if manifest.kind == "full":
        return folder
    # named after the release: the planner labels its trajectories so. A shipped release is
    # merged into the cache (the package may be read-only), under its weights' digest.
    if folder.parent == BUILTIN_DIR:
        cache = cache_dir / "releases" if cache_dir else releases_dir(home) / ".builtin"
        merged = cache / manifest.weights_sha256[:12] / name
    else:
        merged = folder / ".merged" / name
    if not model_store.is_model_dir(merged):
        _merge(base, folder, merged)
    marker = merged / RENDERING_FILE  # the planner loading this folder renders as the release was trained
    pinned = rendering(manifest)
    if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != pinned:
        marker.write_text(pinned + "\n", encoding="utf-8")
    return merged


def export(home: Path, name: str, out: Path, cache_dir: Path | None = None) -> Path:
    """Write release ``name`` as a merged HF model folder at ``out`` (which must not exist yet)."""
    if out.exists():
        raise ReleaseError(f"--out {out} already exists: give a new folder")
    if not out.parent.is_dir():
        raise ReleaseError(f"--out {out}: folder {out.parent} does not exist")
    source = model_dir(home, name, cache_dir)
    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(MANIFEST, "*.part"))
    shutil.copy2(release_path(home, name) / MANIFEST, tmp / "planner-agent-release.json")
    tmp.replace(out)
    return out


def resolve_model(model: str | None, home: Path, cache_dir: Path | None = None) -> str | None:
    """A ``--model`` value with ``release:NAME`` (what ``--release NAME`` records) replaced by the
    folder the local planner loads; ``release:base`` is the untrained embedded model."""
    if model is None or not model.startswith("release:"):
        return model
    name = model.removeprefix("release:")
    return "embedded" if name == BASE else str(model_dir(home, name, cache_dir))
