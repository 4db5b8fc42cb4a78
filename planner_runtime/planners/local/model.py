"""Loading the local model: where its files are, which device and dtype it runs in, its identity.

:func:`load_model` resolves a model spec (the embedded SmolLM2, a transformers directory, a
``.safetensors`` or ``.gguf`` file, see :mod:`model_store`), picks the placement and returns the
model frozen (eval mode, no gradients) with its tokenizer. float32 weights wanted in bfloat16 are
converted once into a cached copy (:func:`model_store.dtype_variant`), so loading maps half the
bytes. The model's attention is swapped for the grouped-query one that lets packed rows share
prompt KV (:mod:`attention`); where that installs, the model can decode in batches.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner_runtime.errors import ModelProvisionError, PlannerError
from planner_runtime.planners.local.attention import install
from planner_runtime.planners.renderings import DEFAULT, RENDERING_FILE, RENDERINGS
from planner_runtime.planners.local.model_store import (
    EMBEDDED_ALIASES,
    EMBEDDED_NAME,
    cache_kwarg,
    dtype_variant,
    embedded_model_dir,
    is_model_dir,
    load_causal_lm,
    quiet_progress_bars,
    resolve_model_path,
)


@dataclass(frozen=True)
class LoadedModel:
    """A frozen model and what decoding needs to know about it."""

    model: Any
    tokenizer: Any
    path: Path  # the model directory (before any dtype conversion)
    cache_kwarg: str  # the forward argument for the KV cache: transformers 5.x renamed it to ``cache``
    batchable: bool  # whether its attention takes shared prompt KV (serve can batch it)
    rendering: str = DEFAULT  # how its prompt writes the tools (a trained release pins its own)


def is_embedded(spec: str | Path | None) -> bool:
    return spec is None or (isinstance(spec, str) and spec.strip().lower() in EMBEDDED_ALIASES)


def label_of(spec: str | Path | None) -> str:
    """A short name for the model ``spec`` names: the embedded model's, or its file or directory's."""
    if is_embedded(spec):
        return EMBEDDED_NAME
    path = Path(spec)  # type: ignore[arg-type]
    return path.parent.name if path.suffix == ".safetensors" else path.stem if path.is_file() else path.name


def known_model_dir(spec: str | Path | None, cache_dir: Path | None) -> Path | None:
    """The model directory ``spec`` names when it exists already; ``None`` when finding it would
    need a conversion (reading a release must never start a 20 s job)."""
    if is_embedded(spec):
        candidate = embedded_model_dir(cache_dir)
    else:
        candidate = Path(spec).expanduser()  # type: ignore[arg-type]
        candidate = candidate.parent if candidate.suffix == ".safetensors" else candidate
    return candidate if candidate.is_dir() and is_model_dir(candidate) else None


def model_release(path: Path, label: str) -> str:
    """``local:<label>@<digest>``, the digest taken over the config and the weight files' sizes."""
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return f"local:{label}@{digest.hexdigest()[:12]}"


def native_bfloat16(torch: Any) -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX tiles)."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def placement(torch: Any, device: str, dtype: "Any | str | None") -> tuple[Any, Any]:
    """The torch device and dtype to run in. ``device="auto"`` picks CUDA when available, else
    the CPU; the default dtype is bfloat16 on CUDA and on CPUs with native bfloat16 arithmetic,
    else float32."""
    chosen = device
    if chosen == "auto":
        chosen = "cuda" if torch.cuda.is_available() else "cpu"
    if chosen.startswith("cuda") and not torch.cuda.is_available():
        raise PlannerError(f"device {device!r} asked for, but CUDA is not available")
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if dtype is None:
        dtype = torch.bfloat16 if chosen.startswith("cuda") or native_bfloat16(torch) else torch.float32
    return torch.device(chosen), dtype


def load_model(spec: str | Path | None, *, device: str, dtype: "Any | str | None", cache_dir: Path | None) -> LoadedModel:
    """Resolve ``spec``, provision it if needed, and load it frozen; a
    :class:`ModelProvisionError` when its files cannot be read."""
    import torch
    from transformers import AutoTokenizer

    path = resolve_model_path(spec, cache_dir)
    where, dtype = placement(torch, device, dtype)
    weights = dtype_variant(path, str(dtype).removeprefix("torch."), cache_dir)
    try:
        with quiet_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = load_causal_lm(weights, dtype=dtype).to(where)
    except (OSError, ValueError) as exc:
        raise ModelProvisionError(f"could not load the model in {path}: {exc}") from exc
    model.eval()
    model.requires_grad_(False)
    batchable = install(model)  # grouped-query SDPA without copying the cache
    return LoadedModel(model, tokenizer, path, cache_kwarg(model), batchable, rendering_of_dir(path))


def rendering_of_dir(path: Path) -> str:
    """The prompt rendering the model in ``path`` was trained on: the name in its
    :data:`RENDERING_FILE`, else ``json`` (every model not trained here)."""
    marker = path / RENDERING_FILE
    if not marker.is_file():
        return DEFAULT
    name = marker.read_text(encoding="utf-8").strip()
    if name not in RENDERINGS:
        raise ModelProvisionError(f"{marker} names prompt rendering {name!r}, which this version does not write "
                                  f"({', '.join(RENDERINGS)}): upgrade planner-agent to load this model")
    return name
