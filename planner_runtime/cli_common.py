"""What the ``planner-agent`` verbs share: the consoles, error exits, the live view of steps and
the summary of an episode, and building a planner, a safety gate and an answerer from options."""

from __future__ import annotations

import json
from enum import IntEnum
from pathlib import Path

import typer
from rich.console import Console

from planner_runtime.contract import Step, Trajectory

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class ExitCode(IntEnum):
    """What a ``planner-agent`` verb's exit status means; scripts branch on these (README)."""

    ok = 0  # the job succeeded: the episode finished (and its verdict, if any, passed); a listing or export was written
    failed = 1  # the job ran but did not succeed: a failed verdict (the agent's), or an episode the agent ended without success
    usage = 2  # the user's mistake: a bad option, file, id or value; nothing was run
    infra = 3  # a device, planner endpoint or other infrastructure fault; not the agent's failure
    truncated = 4  # the episode hit its step, token or time limit before it finished
    interrupted = 130  # Ctrl-C (as shells report SIGINT)


def fail(message: str, code: int = ExitCode.usage) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def _screen_summary(step: Step) -> str:
    """One line about the screen after the step: its app and how many elements it shows."""
    obs = step.feedback.observation
    if obs is None:
        return "screen not read"
    lines = obs.screen.splitlines()
    count = sum(1 for line in lines if line.startswith("["))
    more = next((int(line.split()[1]) for line in lines if line.startswith("... ") and line.split()[1].isdigit()), 0)
    shot = "  (screenshot)" if obs.screenshot else ""
    return f"screen: {obs.package or '?'} · {count + more} elements{shot}"


def print_step(step: Step, depth: int = 0) -> None:
    """A step as the live view and `show` print it; a sub-agent's steps are indented (``depth``)."""
    fb = step.feedback
    call = step.tool_call
    what = f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}" if call else f"(no call) {step.raw_output[:80]!r}"
    if fb.error is not None:
        outcome = f"[red]{fb.status.value}[/red] {fb.error.code.value}: {fb.error.hint}"
    else:
        shown = json.dumps(fb.result, ensure_ascii=False) if fb.result is not None else ""
        outcome = f"[green]{fb.status.value}[/green] {shown[:120]}"
    pad = "    │ " * depth
    label = "sub-step" if depth else "step"
    note = f"\n{pad}        [yellow]{fb.note}[/yellow]" if fb.note else ""
    console.print(
        f"{pad}[bold]{label} {step.index + 1}[/bold]  {what}\n{pad}        → {outcome}  "
        f"[dim]({step.plan_seconds:.2f}s plan, {step.act_seconds:.2f}s act)[/dim]{note}\n{pad}        [dim]{_screen_summary(step)}[/dim]",
        markup=True,
    )


def print_child_step(step: Step) -> None:
    """The live view of a sub-agent at work (its delegate step is printed when it returns)."""
    if step.index == 0:
        console.print("    ┌ [bold]sub-agent[/bold] working")
    print_step(step, 1)


def _ask_user(question: str) -> str:
    return typer.prompt(f"The assistant asks: {question}", err=True)


def answerer(answers: Path | None):  # noqa: ANN202 - an Answerer, or None when nobody can answer
    """A file of answers (question pattern → answer) first; then the person, when at a terminal."""
    import sys

    from planner_runtime.harness.tools.user import ScriptedAnswers, chain

    return chain(ScriptedAnswers.load(answers) if answers else None, _ask_user if sys.stdin.isatty() else None)


def print_summary(traj: Trajectory) -> None:
    console.print(f"\n[bold]status:[/bold] {traj.status.value}   [bold]answer:[/bold] {traj.answer or '-'}")
    if traj.verdict is not None:
        v = traj.verdict
        label = "[green]success[/green]" if v.success else f"[red]failed[/red] ({v.failure_kind.value if v.failure_kind else '?'})"
        console.print(f"[bold]verdict:[/bold] {label}  score {v.score:.2f}")
        for check in v.checks:
            mark = "[green]✓[/green]" if check.passed else "[red]✗[/red]"
            console.print(f"  {mark} {check.name} — {check.evidence}")
    else:
        console.print("[bold]verdict:[/bold] none (the goal is not a task with completion criteria; use --task)")
    console.print(f"[bold]trajectory:[/bold] {traj.id}  ({len(traj.steps)} steps, {traj.usage.prompt_tokens} prompt + {traj.usage.completion_tokens} output tokens)")


def make_planner(backend: str, model: str | None, script: Path | None):  # noqa: ANN202 - a Planner
    from planner_runtime import planners

    kwargs: dict = {}
    if backend == "local" and model:
        kwargs["model"] = model
    if backend == "scripted":
        kwargs["script"] = json.loads(script.read_text()) if script else []
    return planners.create(backend, **kwargs)


def _ask(tool: str, category, arguments: dict) -> bool:  # noqa: ANN001 - Sensitivity
    shown = json.dumps(arguments, ensure_ascii=False)
    return typer.confirm(f"The assistant wants to {category.value}: {tool} {shown}. Allow?", default=False, err=True)


def safety_gate(policy: Path | None):  # noqa: ANN202 - SafetyGate
    """Policy from a file (deny by default); a y/n prompt for the rest when a person is at the terminal."""
    import sys

    from planner_runtime.harness.safety import Policy, SafetyGate

    rules = Policy.load(policy) if policy else Policy()
    return SafetyGate(policy=rules, confirm=_ask if sys.stdin.isatty() else None)
