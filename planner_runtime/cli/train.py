"""``planner-agent train sft``: fine-tune a causal LM on stored trajectories and write a release."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import ExitCode, console, err, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

train_app = typer.Typer(help="Train planner models on stored trajectories.", no_args_is_help=True)


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise fail(f"--since {value!r}: give an ISO date or time, e.g. 2026-05-01 or 2026-05-01T09:30") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@train_app.command("sft")
def sft_cmd(
    out: Optional[str] = typer.Option(None, "--out", help="The release's name (default: sft-<date>-<time>)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file); it must exist."),
    dataset: Optional[Path] = typer.Option(None, "--dataset", help="Train on a dataset `planner-agent data build` wrote (a folder), "
                                           "its trajectories read from --store; no other selection option goes with it."),
    source: Optional[str] = typer.Option(None, "--source", help="Only trajectories from this source: sandbox, simulated or real."),
    data_source: Optional[str] = typer.Option(None, "--data-source", help="Only trajectories of this kind: demo (task reference solutions), teacher (an openai:// planner) or self (the local planner)."),
    split: str = typer.Option("train", "--split", help="Task templates of this split: train, test or all."),
    include_failed: bool = typer.Option(False, "--include-failed", help="Also unverified and failed episodes (their ok turns)."),
    collection: Optional[str] = typer.Option(None, "--collection", help="Only trajectories of this collection."),
    since: Optional[str] = typer.Option(None, "--since", help="Only trajectories started at or after this ISO date/time (UTC unless given)."),
    planner: Optional[str] = typer.Option(None, "--planner", help="Only trajectories planned by this planner (as stored: scripted, local, ...)."),
    base: str = typer.Option("embedded", "--base", help="The model to train: an HF causal LM directory, 'embedded' (SmolLM2), or release:NAME to go on from a release."),
    lora: bool = typer.Option(True, "--lora/--full", help="Train a LoRA adapter (default) or every weight."),
    epochs: float = typer.Option(3.0, "--epochs", min=0.01, help="Passes over the data."),
    lr: Optional[float] = typer.Option(None, "--lr", min=0.0, help="Learning rate (default 2e-4 for LoRA, 2e-5 full)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Stop after this many optimizer steps (overrides --epochs)."),
    max_length: int = typer.Option(4096, "--max-length", min=16, help="Tokens per sequence; a longer one keeps its end."),
    rank: int = typer.Option(16, "--rank", min=1, help="LoRA rank."),
    rendering: str = typer.Option("compact", "--rendering", help="How prompts write the tools: compact (one line a tool, about 5x fewer tokens) or json (Qwen's); the release pins it."),
    frozen_system: bool = typer.Option(False, "--frozen-system/--full-gradient", help="Run each sequence's system turn (instructions, skills, tools: most of its tokens) without gradient: the same loss, 1.25-1.4x faster on 2 CPU cores and about 3/4 of the memory; the gradient leaves out the path through that turn."),
    activation_tokens: int = typer.Option(512, "--activation-tokens", min=0, help="Keep the activations of at most about this many tokens a step for the backward pass; a longer sequence recomputes just enough layers' (same loss and gradient). Bounds training memory: peak RSS 3.5-4 GB on 2 cores, against 5.4-7 GB unbounded, for 4-25% more time. 0: no bound."),
    save_steps: int = typer.Option(50, "--save-steps", min=1, help="Steps between checkpoints (what --resume continues from)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, help="CPU threads (default: PLANNER_AGENT_THREADS, else every core)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the stopped run of --out from its last checkpoint."),
    as_json: bool = typer.Option(False, "--json", help="Print the release's manifest as JSON on stdout."),
) -> None:
    """Supervised fine-tuning with TRL: one sequence per trajectory, loss only on the assistant
    turns the harness accepted (a turn that drew an error stays in the context, untrained).
    CPU by default, CUDA with bf16 when present. Writes a release (see `planner-agent releases`).

    Exit status: 0 when the release was written, 2 for a usage error (no store, no data, a
    release that exists), 130 on Ctrl-C (the command that resumes it is printed).
    """
    from planner_runtime.training import data, sft
    from planner_runtime.trajectories.store import TrajectoryStore

    name = out or datetime.now().strftime("sft-%Y%m%d-%H%M%S")
    again = shlex.join(["planner-agent", "train", "sft", *sys.argv[3:], *([] if out else ["--out", name]),
                        *([] if resume else ["--resume"])])
    settings = Settings.from_env()
    chosen = {"--source": source, "--data-source": data_source, "--split": None if split == "train" else split,
              "--include-failed": include_failed or None, "--collection": collection, "--since": since, "--planner": planner}
    if dataset is not None and any(v is not None for v in chosen.values()):
        given = ", ".join(k for k, v in chosen.items() if v is not None)
        raise fail(f"--dataset trains on the trajectories the dataset drew: drop {given}")
    try:
        selection = data.Selection(source=source, data_source=data_source, split=split, success=None if include_failed else True,
                                   collection=collection, since=_since(since), planner=planner)
        options = sft.SftOptions(base=base, lora=lora, epochs=epochs, lr=lr, max_steps=max_steps, max_length=max_length,
                                 lora_rank=rank, lora_alpha=2 * rank, save_steps=save_steps, threads=threads,
                                 rendering=rendering, frozen_system=frozen_system,
                                 activation_tokens=activation_tokens or None)
        # the trainer prints its log lines to stdout: they go with the progress bar, so stdout holds only --json
        with TrajectoryStore(store or settings.store_path, create=False) as db, contextlib.redirect_stdout(sys.stderr):
            result = sft.train_sft(db, selection, options, name, home=settings.home, resume=resume,
                                   cache_dir=settings.cache_dir, on_data=_show_data, dataset=dataset)
    except KeyboardInterrupt:
        err.print(f"interrupted: release {name} is not written; its checkpoints are kept, continue with\n  {again}",
                  soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.interrupted) from None
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(result.manifest.model_dump(mode="json")))
        return
    console.print(f"release {name}: {result.steps} steps, training loss {result.train_loss:.4f}, written to {result.path}",
                  soft_wrap=True, markup=False)
    console.print(f"use it with --planner local --release {name}", markup=False)


def _show_data(dataset) -> None:  # noqa: ANN001 - training.data.SftData
    err.print(f"training on {len(dataset.sequences)} sequences from {dataset.trajectories} trajectories: "
              f"{dataset.tokens} tokens, {dataset.trained_tokens} trained ({dataset.masked_turns} error turns masked)",
              soft_wrap=True, markup=False)


def _register_rl() -> None:
    from planner_runtime.cli.train_rl import report_cmd, rl_cmd

    train_app.command("rl")(rl_cmd)
    train_app.command("report")(report_cmd)


_register_rl()
