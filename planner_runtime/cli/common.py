"""What the ``planner-agent`` verbs share: the consoles, error exits, the live view of steps and
the summary of an episode, and building a planner, a safety gate and an answerer from options."""

from __future__ import annotations

import json
import sys
import threading
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import Any, Callable, Iterator

import typer
from rich.console import Console
from rich.markup import escape

from planner_runtime.contract import FailureKind, Step, Trajectory, TrajectoryStatus
from planner_runtime.cost import TokenUsage, own_usage
from planner_runtime.config import Settings
from planner_runtime.errors import ConfigError

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


EXIT_CODES_HELP = (
    "Exit status: 0 the job succeeded (an episode finished and its verdict, if any, passed); "
    "1 it ran but failed (a failed verdict); 2 a usage mistake, nothing run; "
    "3 an infrastructure fault (device, planner endpoint); 4 an episode cut off by its step, token or time limit; "
    "130 interrupted (Ctrl-C)."
)


def serve_until_interrupted(stop: Callable[[], None]) -> None:
    """Block until Ctrl-C (what a verb that serves does once its server listens), then ``stop``."""
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop()


def fail(message: str, code: int = ExitCode.usage) -> typer.Exit:
    """One line on stderr, printed as is (a message may hold ``[...]``, which is not markup)."""
    err.print(f"[red]error:[/red] {escape(message)}", markup=True, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def episode_exit(traj: Trajectory) -> ExitCode:
    """The exit status of a verb that ran one episode (see :class:`ExitCode`)."""
    if traj.status is TrajectoryStatus.infra_error:
        return ExitCode.infra
    if traj.status is TrajectoryStatus.truncated:
        return ExitCode.truncated
    if traj.status is TrajectoryStatus.interrupted:
        return ExitCode.interrupted
    if traj.verdict is not None and not traj.verdict.success:
        return ExitCode.infra if traj.verdict.failure_kind is FailureKind.infra else ExitCode.failed
    return ExitCode.ok


@contextmanager
def reports_to_stderr(enabled: bool) -> Iterator[None]:
    """With ``--json``, stdout carries only the JSON: the live view and summaries go to stderr."""
    if not enabled:
        yield
        return
    saved = console.file
    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = saved


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
    from planner_runtime.harness.tools.user import ScriptedAnswers, chain

    return chain(ScriptedAnswers.load(answers) if answers else None, _ask_user if sys.stdin.isatty() else None)


def print_summary(traj: Trajectory, tokens: TokenUsage | None = None) -> None:
    """The end of an episode's report; ``tokens`` (from the store) adds its sub-agents' to its own."""
    console.print(f"\n[bold]status:[/bold] {traj.status.value}   [bold]answer:[/bold] {traj.answer or '-'}")
    if traj.verdict is not None:
        v = traj.verdict
        label = "[green]success[/green]" if v.success else f"[red]failed[/red] ({v.failure_kind.value if v.failure_kind else '?'})"
        console.print(f"[bold]verdict:[/bold] {label}  score {v.score:.2f}")
        for check in v.checks:
            mark = "[green]✓[/green]" if check.passed else "[red]✗[/red]"
            console.print(f"  {mark} {check.name} — {check.evidence}")
    else:
        console.print("[bold]verdict:[/bold] none (a free-form goal is neither seeded nor verified; use --task ID for a task's checks)")
    tokens = tokens or TokenUsage(own=own_usage(traj))
    console.print(f"[bold]trajectory:[/bold] {traj.id}  ({len(traj.steps)} steps, {tokens.split()})", soft_wrap=True)


def read_json(path: Path, option: str) -> Any:
    """A JSON file given to ``option``; a missing or malformed file is a :class:`ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option} {path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{option} {path}: not JSON: {exc}") from None


def check_calls(items: Any, where: str) -> list[dict[str, Any]]:
    """A script of tool calls: a list of ``{"name": "...", "arguments": {...}}`` objects."""
    if not isinstance(items, list):
        raise ConfigError(f'{where}: expected a JSON list of tool calls like [{{"name": "open_app", "arguments": {{"app": "Clock"}}}}]')
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f'{where}: item {number} is not an object with "name" and "arguments"')
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise ConfigError(f'{where}: item {number} has no "name" (the tool to call)')
        if not isinstance(item.get("arguments", {}), dict):
            raise ConfigError(f'{where}: item {number}: "arguments" must be an object')
    return items


def load_script(path: Path) -> list[dict[str, Any]]:
    """``--script FILE`` for the scripted planner, checked (see :func:`check_calls`)."""
    return check_calls(read_json(path, "--script"), f"--script {path}")


def make_planner(backend: str, model: str | None, script: Path | None, timeout: float | None = None,
                 task=None):  # noqa: ANN001, ANN202 - a TaskSpec or None -> a Planner
    """The planner of ``--planner``; ``timeout`` (seconds per request) applies to openai backends.
    ``scripted`` needs ``script``: without one it would plan nothing and an episode would end
    with nothing done, counted as finished. ``demo`` plays ``task``'s demo, so it needs a task
    that has one."""
    from planner_runtime import planners

    from planner_runtime.cli.release_option import resolved_model

    kwargs: dict = {}
    if backend == "demo":
        from planner_runtime.planners.demo import NEEDS_TASK

        if task is None:
            raise ConfigError(NEEDS_TASK)
        if not task.demo:
            raise ConfigError(f"--planner demo: task {task.id} has no demo (add one to its spec, see `planner-agent tasks demos`)")
        kwargs["calls"] = task.rendered_demo()
    if backend == "local" and model:
        kwargs["model"] = resolved_model(model)  # --release NAME: the release's checked model folder
    if backend == "scripted":
        if script is None:
            raise ConfigError('--planner scripted needs --script FILE, a JSON list of tool calls like [{"name": "finish", "arguments": {"answer": "done"}}]')
        kwargs["script"] = load_script(script)
    if timeout is not None and backend.startswith("openai"):
        kwargs["timeout"] = timeout
    return planners.create(backend, **kwargs)


def _ask(tool: str, category, arguments: dict) -> bool:  # noqa: ANN001 - Sensitivity
    shown = json.dumps(arguments, ensure_ascii=False)
    return typer.confirm(f"The assistant wants to {category.value}: {tool} {shown}. Allow?", default=False, err=True)


def safety_gate(policy: Path | None):  # noqa: ANN202 - SafetyGate
    """Policy from a file (deny by default); a y/n prompt for the rest when a person is at the terminal."""
    from planner_runtime.harness.safety import Policy, SafetyGate

    rules = Policy.load(policy) if policy else Policy()
    return SafetyGate(policy=rules, confirm=_ask if sys.stdin.isatty() else None)


def planner_timeout_option(seconds: float | None) -> dict[str, float]:
    """make_planner's ``timeout`` when --planner-timeout was given (else the backend's default)."""
    return {} if seconds is None else {"timeout": seconds}


def disposable_serials(settings: Settings) -> frozenset[str]:
    """Serials the user marked disposable (PLANNER_AGENT_DISPOSABLE_SERIALS), as a set."""
    value = getattr(settings, "disposable_serials", None) or ()
    if isinstance(value, str):
        value = value.split(",")
    return frozenset(s.strip() for s in value if s.strip())
