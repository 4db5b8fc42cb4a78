"""``planner-agent train rl`` (online RL on the device farm, CARE or vanilla GRPO) and ``train report``."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import ExitCode, console, disposable_serials, err, fail
from planner_runtime.cli.ray_option import RAY_HELP, RAY_HOSTS_HELP, check_ray_options, ray_farm
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError


def rl_cmd(
    source: Optional[str] = typer.Option(None, "--from", help="The release to start from (an SFT release or its descendant; default: the default release)."),
    algo: str = typer.Option("care", "--algo", help="care (regime per group, a floor under the std) or grpo (vanilla group normalisation)."),
    out: Optional[str] = typer.Option(None, "--out", help="The new release's name (default: rl-<algo>-<date>-<time>)."),
    group: int = typer.Option(4, "--group", "-G", help="Episodes per task instance."),
    steps: int = typer.Option(20, "--steps", min=1, help="Optimizer steps."),
    tasks_per_step: int = typer.Option(2, "--tasks-per-step", min=1, help="Task instances per step."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task templates (repeat the option)."),
    split: str = typer.Option("train", "--split", help="Task templates of this split: train, test or all."),
    devices: int = typer.Option(2, "--devices", "-n", min=1, help="Episodes in parallel (and virtual phones, without --adb)."),
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="Roll out on the phones of this adb server (repeat for several); needs --allow-reset."),
    allow_reset: bool = typer.Option(False, "--allow-reset", help="Let task setup wipe app data on phones that are not virtual or disposable."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for the rollouts (allow: [purchase, ...]); deny by default: a blocked sensitive action fails the episode."),
    lr: float = typer.Option(2e-5, "--lr", min=0.0, help="Learning rate."),
    lora: bool = typer.Option(True, "--lora/--full", help="Train a LoRA (a LoRA release's own adapter goes on; default) or every weight."),
    episode_steps: int = typer.Option(6, "--episode-steps", min=1, help="Planner turns an episode may take."),
    temperature: float = typer.Option(1.0, "--temperature", min=0.05, max=2.0, help="Sampling temperature of the rollouts."),
    low: float = typer.Option(0.25, "--low", help="CARE: below this group success rate, a progress bonus."),
    high: float = typer.Option(0.75, "--high", help="CARE: above this group success rate, a cost penalty."),
    progress_weight: float = typer.Option(0.5, "--progress-weight", help="Weight of the verifier's partial checks in the reward."),
    cost_weight: float = typer.Option(0.2, "--cost-weight", help="Weight of steps and output tokens in the reward."),
    controller: str = typer.Option("rule", "--controller", help="Retunes CARE's thresholds and weights: rule, none, or http(s)://HOST:PORT of an OpenAI-compatible endpoint."),
    controller_model: str = typer.Option("controller", "--controller-model", help="The model name sent to an endpoint controller."),
    controller_every: int = typer.Option(5, "--controller-every", min=1, help="Steps between controller updates."),
    save_steps: int = typer.Option(5, "--save-steps", min=1, help="Steps between checkpoints (what --resume continues from)."),
    seed: int = typer.Option(0, "--seed", help="Seeds the task order and the trainer."),
    first_seed: int = typer.Option(0, "--first-seed", min=0, help="Instances of templates with random parameters start at this seed."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, help="CPU threads (default: PLANNER_AGENT_THREADS, else every core)."),
    share_prompts: bool = typer.Option(False, "--share-prompts", help="Update on a step's episodes at once, each group's prompt run once: "
                                       "the same gradient for about a third of the compute, holding the whole step's activations."),
    resume: bool = typer.Option(False, "--resume", help="Continue the stopped run of --out from its last checkpoint."),
    ray: Optional[str] = typer.Option(None, "--ray", help=RAY_HELP + " Each step's weights are published to the hosts, "
                                      "which load the base model from the same path as here."),
    ray_hosts: Optional[int] = typer.Option(None, "--ray-hosts", min=1, help=RAY_HOSTS_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the release's manifest as JSON on stdout."),
) -> None:
    """Online RL: each step runs G episodes of each of its task instances on the device pool
    through the real harness, scores them with the task's verifier, and updates the planner
    with TRL's GRPO trainer — CARE's rewards and advantages, or the vanilla baseline's. Each
    step's figures go to <home>/training/<out>/steps.jsonl (see `train report`).

    Exit status: 0 when the release was written, 2 for a usage error (a release with no SFT
    ancestor, a group below 2, a release that exists), 3 when the devices failed, 130 on
    Ctrl-C (the command that resumes it is printed).

    With --ray, each step's episodes run on the device hosts of a Ray cluster (-n at once on
    each): the trainer publishes the weights that train once a step (a LoRA's adapter, or every
    weight with --full) and every host loads the base model from the path it has here, so the
    model must be at that path on each node. The store, the log and the checkpoints stay here;
    a resumed run may use another cluster, or none.
    """
    from device_farm.errors import DeviceError
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.harness.safety import Policy
    from planner_runtime.runs.collect import CollectionStopped
    from planner_runtime.training import care, releases, rl

    settings = Settings.from_env()
    try:
        check_ray_options(ray, ray_hosts)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    try:
        chosen = care.Algo(algo)
    except ValueError:
        raise fail(f"--algo {algo!r}: choose care or grpo") from None
    name = out or datetime.now().strftime(f"rl-{chosen.value}-%Y%m%d-%H%M%S")
    again = shlex.join(["planner-agent", "train", "rl", *sys.argv[3:], *([] if out else ["--out", name]),
                        *([] if resume else ["--resume"])])
    try:
        start = source or releases.default_release(settings.home)
        if start is None:
            raise fail("no release to start from: train one with `planner-agent train sft`, then pass --from")
        try:
            weights = care.CareSettings(low=low, high=high, progress_weight=progress_weight, cost_weight=cost_weight)
        except ValueError as exc:
            raise fail(f"CARE settings (--low, --high, --progress-weight, --cost-weight): {exc}") from None
        options = rl.RlOptions(
            algo=chosen, source=start, group=group, steps=steps, tasks_per_step=tasks_per_step, lr=lr,
            episode_steps=episode_steps, temperature=temperature, controller_every=controller_every,
            care=weights, lora=lora,
            save_steps=save_steps, seed=seed, first_seed=first_seed, devices=devices, threads=threads,
            share_prompts=share_prompts, allow_reset=allow_reset, disposable=disposable_serials(settings))
        options.check()
        templates = _templates(task, split)
        gate = Policy.load(policy) if policy else None
        tuner = _controller(controller, controller_model, controller_every)
        with contextlib.ExitStack() as stack:
            if ray is not None:  # each host builds its own pool
                farm, pool = stack.enter_context(ray_farm(ray, ray_hosts, adb, devices, None)), None
            else:
                farm, pool = None, stack.enter_context(pool_from_options(adb or [], 0 if adb else devices))
            stack.enter_context(contextlib.redirect_stdout(sys.stderr))
            result = rl.train_rl(options, name, home=settings.home, templates=templates, pool=pool, policy=gate,
                                 controller=tuner, resume=resume, cache_dir=settings.cache_dir, farm=farm)
    except KeyboardInterrupt:
        err.print(f"interrupted: release {name} is not written; its checkpoints and rollouts are kept, continue with\n  {again}",
                  soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.interrupted) from None
    except DeviceError as exc:
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except CollectionStopped as exc:  # with --ray: every host lost, or a host's code raised
        from planner_runtime.runs.distributed import HostsLost

        raise fail(f"{exc} (the run continues with\n  {again})", ExitCode.infra if isinstance(exc, HostsLost) else ExitCode.failed) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(result.manifest.model_dump(mode="json")))
        return
    console.print(f"release {name}: {result.steps} RL steps, written to {result.path}", soft_wrap=True, markup=False)
    console.print(f"its step log: planner-agent train report {name}", markup=False)


def _templates(task: list[str] | None, split: str):  # noqa: ANN202 - list[TaskSpec]
    from planner_runtime.tasks.spec import builtin_suite

    if split not in ("train", "test", "all"):
        raise fail(f"--split {split!r}: choose train, test or all")
    templates = list(builtin_suite().tasks)
    unknown = sorted(set(task or ()) - {t.id for t in templates})
    if unknown:
        raise fail(f"no task {unknown[0]!r}; see `planner-agent tasks list`")
    if task:
        templates = [t for t in templates if t.id in task]
    if split != "all":
        templates = [t for t in templates if t.split_name == split]
    if not templates:
        raise fail("no task matches --task and --split")
    return templates


def _controller(kind: str, model: str, every: int):  # noqa: ANN202 - a Controller or None
    from planner_runtime.training.controller import Bounds, LlmController, RuleController

    if kind == "none":
        return None
    if kind == "rule":
        return RuleController(Bounds(), every=every)
    if kind.startswith(("http://", "https://")):
        try:
            return LlmController(kind.rstrip("/"), model, Bounds(), every=every)
        except ValueError as exc:
            raise fail(f"--controller {kind!r}: {exc}") from None
    raise fail(f"--controller {kind!r}: choose rule, none, or an http(s):// endpoint")


def report_cmd(
    run: str = typer.Argument(..., help="The RL run's name (its --out) or its folder."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where to write the page (default: report.html in the run's folder)."),
) -> None:
    """Draw an RL run's step log (success rate, regimes, rewards, advantages, tokens, times,
    controller changes) as one HTML page."""
    from planner_runtime.training.rl_report import write_report

    settings = Settings.from_env()
    folder = Path(run) if Path(run).is_dir() else settings.home / "training" / run
    try:
        path = write_report(folder, out)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"report: {path}", soft_wrap=True, markup=False)
