"""One LoRA over the root base model from a chain of LoRA releases, so a chained release can ship.

``train sft --base release:NAME`` trains a LoRA over NAME merged into its own base. That release's
manifest names the merged parent by a digest of the merged weights, and those bits depend on the
machine that merged them (float rounding of ``B @ A``), so it loads only where it was trained.
A LoRA's update is ``scale * B @ A``; a chain's updates add up, and their sum is one LoRA of the
summed rank: the ``A`` matrices stacked, the ``B`` matrices side by side, each ``B`` times its own
scale, with a scale of 1 (``lora_alpha == r``). :func:`flatten` writes that adapter as a new
release over the root's base, whose digest anyone can check; nothing is merged or recomputed, so
the stored weights are the chain's own (times a power of two for the usual ``alpha = 2 r``).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

from planner_runtime.planners.renderings import RENDERING_FILE
from planner_runtime.training import releases
from planner_runtime.training.releases import Manifest, ReleaseError

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
# settings under which an adapter's update is not ``lora_alpha / r * B @ A`` on the same modules
_UNSUPPORTED = ("use_rslora", "use_dora", "rank_pattern", "alpha_pattern", "modules_to_save", "layers_to_transform",
                "trainable_token_indices", "target_parameters")


def chain(home: Path, name: str) -> list[Manifest]:
    """Release ``name`` and the releases it was trained from, leaf first, each one's weight files
    checked against its manifest; a :class:`ReleaseError` for a full release, a loop or a damaged link."""
    links: list[Manifest] = []
    current: str | None = name
    while current is not None:
        if any(m.name == current for m in links):
            raise ReleaseError(f"release {name!r}: its parents loop back to {current!r}")
        manifest = releases.load_manifest(home, current)
        if manifest.kind != "lora":
            raise ReleaseError(f"release {current!r} is a full fine-tune, not a LoRA: only a chain of LoRA releases flattens")
        releases.check_weights(home, manifest)  # not verify(): that merges each parent to check the next
        links.append(manifest)
        current = releases.parent_of(manifest.base.spec)
    return links


def _config(home: Path, manifest: Manifest) -> dict:
    path = releases.release_path(home, manifest.name) / ADAPTER_CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"release {manifest.name!r}: {path} is not readable JSON ({exc})") from exc
    odd = [key for key in _UNSUPPORTED if config.get(key)]
    if config.get("peft_type") != "LORA" or odd:
        raise ReleaseError(f"release {manifest.name!r}: an adapter with {', '.join(odd) or config.get('peft_type')} "
                           "does not flatten (only plain LoRA updates add up)")
    return config


def flatten(home: Path, name: str, out: str) -> Manifest:
    """Write release ``out``: one LoRA over the root base equal to the chain ending in ``name``."""
    import torch
    from safetensors.torch import load_file, save_file

    releases.check_new_name(out)
    final = releases.release_path(home, out)
    if final.exists():
        raise ReleaseError(f"release {out!r} already exists in {final.parent}: choose another --out")
    links = chain(home, name)
    if len(links) == 1:
        raise ReleaseError(f"release {name!r} was trained on {links[0].base.name}, not on another release: nothing to flatten")
    root = links[-1]
    configs = [_config(home, m) for m in links]
    modules = {frozenset(c["target_modules"]) for c in configs}
    if len(modules) != 1:
        raise ReleaseError(f"release {name!r}: its chain's adapters train different modules, so they do not add up into one")
    weights = [load_file(releases.release_path(home, m.name) / ADAPTER_WEIGHTS) for m in links]
    keys = set(weights[0])
    if any(set(w) != keys for w in weights):
        raise ReleaseError(f"release {name!r}: its chain's adapters hold different tensors, so they do not add up into one")
    rank = sum(int(c["r"]) for c in configs)
    tensors = {}
    for key in sorted(keys):
        if key.endswith("lora_A.weight"):  # (r, in): stacked
            tensors[key] = torch.cat([w[key] for w in weights], dim=0).contiguous()
        elif key.endswith("lora_B.weight"):  # (out, r): side by side, each times its own scale
            parts = [w[key].float() * (float(c["lora_alpha"]) / int(c["r"])) for w, c in zip(weights, configs)]
            tensors[key] = torch.cat(parts, dim=1).to(weights[0][key].dtype).contiguous()
        else:
            raise ReleaseError(f"release {name!r}: adapter tensor {key!r} is neither a LoRA A nor B matrix")
    leaf_folder = releases.release_path(home, name)
    tmp = final.with_name(final.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        save_file(tensors, tmp / ADAPTER_WEIGHTS, metadata={"format": "pt"})
        config = dict(configs[0], r=rank, lora_alpha=rank)
        (tmp / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        for item in leaf_folder.iterdir():  # the tokenizer and the rendering the chain was trained on
            if item.is_file() and (item.name.startswith(("tokenizer", "special_tokens", "chat_template"))
                                   or item.name == RENDERING_FILE):
                shutil.copy2(item, tmp / item.name)
        leaf = links[0]
        manifest = leaf.model_copy(update={
            "name": out, "created_at": datetime.now(timezone.utc), "base": root.base,
            "weights_sha256": releases.weights_sha256(tmp), "parent": name, "bench": (), "approval": None,
            "hyperparameters": dict(leaf.hyperparameters, base=root.base.spec, lora_rank=rank, lora_alpha=rank,
                                    flattened=[m.name for m in links]),
        })
        releases.write_manifest(tmp, manifest)
        tmp.replace(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest
