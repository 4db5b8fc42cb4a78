"""``planner-agent releases list|show|promote|export|flatten``: the models training wrote (the
``--release NAME`` option is :mod:`planner_runtime.cli.release_option`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import console, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

releases_app = typer.Typer(help="Trained planner releases: list, show, promote, export, flatten.", no_args_is_help=True)


@releases_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print the manifests as a JSON list.")) -> None:
    """Every release, oldest first; the default is marked."""
    from planner_runtime.training import releases

    home = Settings.from_env().home
    found, default = releases.list_releases(home), releases.default_release(home)
    if as_json:
        print(json.dumps([m.model_dump(mode="json") | {"default": m.name == default} for m in found]))
        return
    if not found:
        console.print(f"no releases in {releases.releases_dir(home)} (train one with `planner-agent train sft`)", markup=False, soft_wrap=True)
        return
    for m in found:
        mark = "*" if m.name == default else " "
        bench = f"bench {m.bench[-1]['rate']:.0%}" if m.bench and m.bench[-1].get("rate") is not None else "not benched"
        console.print(f"{mark} {m.name}  {m.kind} on {m.base.name}  {m.data.get('trajectories', 0)} trajectories  "
                      f"{bench}  {m.created_at:%Y-%m-%d %H:%M}", markup=False, soft_wrap=True)


@releases_app.command("show")
def show_cmd(name: str = typer.Argument(..., help="The release's name.")) -> None:
    """A release's manifest (as JSON), after checking its files and base against it."""
    from planner_runtime.training import releases

    settings = Settings.from_env()
    try:
        manifest = releases.load_manifest(settings.home, name)
        releases.verify(settings.home, manifest, settings.cache_dir)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    out = manifest.model_dump(mode="json") | {"default": releases.default_release(settings.home) == name}
    print(json.dumps(out, indent=2))


@releases_app.command("export")
def export_cmd(
    name: str = typer.Argument(..., help="The release's name."),
    out: Path = typer.Option(..., "--out", help="A new folder for the merged HF model (transformers and vLLM load it)."),
) -> None:
    """Write the release as one HF model folder: the base with the adapter merged in, and the tokenizer."""
    from planner_runtime.training import releases

    settings = Settings.from_env()
    try:
        path = releases.export(settings.home, name, out, settings.cache_dir)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"release {name} written to {path}", markup=False, soft_wrap=True)


@releases_app.command("flatten")
def flatten_cmd(
    name: str = typer.Argument(..., help="A release trained from another release (train sft --base release:NAME)."),
    out: str = typer.Option(..., "--out", help="The new release's name."),
) -> None:
    """Write a chained release as one LoRA over the root base model (ranks add up), so it loads on
    any machine: its base is then checked by the base model's own digest, not a merged parent's."""
    from planner_runtime.training import flatten

    try:
        manifest = flatten.flatten(Settings.from_env().home, name, out)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    chain = " + ".join(manifest.hyperparameters["flattened"])
    console.print(f"release {out}: {chain} as one rank-{manifest.hyperparameters['lora_rank']} LoRA over {manifest.base.name}",
                  markup=False, soft_wrap=True)


@releases_app.command("promote")
def promote_cmd(
    name: str = typer.Argument(..., help="The release's name."),
    bench: str = typer.Option(..., "--bench", help="A bench id that benched this release and the current default on --split test."),
    approve: bool = typer.Option(False, "--approve", help="Required: you approve making this release the default."),
    by: Optional[str] = typer.Option(None, "--by", help="Required: who approves."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store the bench wrote to; it must exist."),
) -> None:
    """Make a release the default, with a person's approval and a bench on the test split at
    least as good as the current default's; both are recorded in the release's manifest."""
    from planner_runtime.training import promotion, releases
    from planner_runtime.trajectories.store import TrajectoryStore

    if not approve or not by:
        raise fail("promotion needs a person's approval: add --approve --by YOUR-NAME")
    settings = Settings.from_env()
    try:
        default = releases.default_release(settings.home) or releases.BASE
        if default == name:
            raise releases.ReleaseError(f"release {name!r} is already the default")
        with TrajectoryStore(store or settings.store_path, create=False) as db:
            evidence = _evidence(db, bench, name, default, settings)
        manifest = promotion.promote(settings.home, name, by=by, evidence=evidence, cache_dir=settings.cache_dir)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"release {name} is the default now (bench {bench}: {evidence.rate:.0%} vs {default} "
                  f"{evidence.default_rate:.0%} on the test split; approved by {manifest.approval.by})", markup=False, soft_wrap=True)


def _evidence(db, bench: str, name: str, default: str, settings: Settings):  # noqa: ANN001, ANN202 - -> BenchEvidence
    """The bench's overall figures for ``name`` and for ``default``, from its collections."""
    from dataclasses import asdict

    from planner_runtime.bench.runner import collection_of, results
    from planner_runtime.bench.stats import by_category
    from planner_runtime.cli.bench import _recorded, _tasks
    from planner_runtime.training.promotion import BenchEvidence, is_model_of
    from planner_runtime.training.releases import ReleaseError

    specs = _recorded(db, bench, db.path)
    figures = {}
    for i, spec in enumerate(specs):
        for who in (name, default):
            if who not in figures and spec.planner == "local" and is_model_of(spec.model, who):
                figures[who] = by_category(results(db, collection_of(bench, i), _tasks(spec), settings.prices).outcomes)
    for who in (name, default):
        if who not in figures:
            raise ReleaseError(f"bench {bench} did not bench {'release ' + repr(who) if who != 'base' else 'the base model'}: "
                               f"bench it with --planner local --release {who}")
    mine, theirs = figures[name]["overall"], figures[default]["overall"]
    return BenchEvidence(bench=bench, split=specs[0].split or "all", release=name, rate=mine.rate, n=mine.n, default=default,
                         default_rate=theirs.rate, default_n=theirs.n, categories={k: asdict(v) for k, v in figures[name].items()})
