"""Build the viewer's HTML from trajectories: plain string building, every value escaped.

:func:`render_page` takes finished (or interrupted) trajectories and an optional artifact reader
for screenshots; it returns one HTML document with a table of contents when there are several.
Nothing here touches the store or the network.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from html import escape
from typing import Any, Callable, Iterable, Mapping, Sequence

from planner_runtime.contract import Message, Step, Trajectory, Usage, added_messages
from planner_runtime.cost import TokenUsage, own_usage
from planner_runtime.viewer.style import CSS, CSP

# A screenshot reference → (bytes, media type), or None when it cannot be found.
ScreenshotReader = Callable[[str], "tuple[bytes, str] | None"]
_IMAGE_TYPES = {"image/png", "image/jpeg", "image/webp"}


def e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{e(cls)}">{e(text)}</pre>' if text else ""


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"


def _rows(pairs: Iterable[tuple[str, Any]]) -> str:
    return "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in pairs)


def _outcome(traj: Trajectory) -> tuple[str, str]:
    """(badge class, label) for the trajectory as a whole."""
    v = traj.verdict
    if v is None:
        return "", f"{traj.status.value}, not verified"
    if v.success:
        return "ok", "success"
    kind = v.failure_kind.value if v.failure_kind else "?"
    return ("warn" if kind in ("infra", "spec") else "bad"), f"failed ({kind})"


def _verdict(traj: Trajectory) -> str:
    v = traj.verdict
    if v is None:
        return '<p class="meta">No verdict: the goal was not a task with completion criteria, or verification did not run.</p>'
    rows = "".join(
        f'<tr class="check {"passed" if c.passed else "failed"}"><td class="{"pass" if c.passed else "fail"}">'
        f'{"✓" if c.passed else "✗"}</td><td>{e(c.name)}</td><td>{e(c.evidence)}</td></tr>'
        for c in v.checks
    )
    cls, label = _outcome(traj)
    return (f'<p><span class="badge {cls}">{e(label)}</span> score {v.score:.2f}</p>'
            f'<table class="checks"><tr><th></th><th>check</th><th>evidence</th></tr>{rows}</table>')


def _screenshot(ref: str | None, read: ScreenshotReader | None) -> str:
    if not ref:
        return ""
    found = read(ref) if read is not None else None
    if found is None or found[1] not in _IMAGE_TYPES:
        return f'<div class="shot meta">screenshot {e(ref)} not available</div>'
    data, media = found
    uri = f"data:{media};base64,{base64.b64encode(data).decode('ascii')}"
    return f'<div class="shot"><img alt="screenshot after this step" src="{e(uri)}"></div>'


def _step(step: Step, new: Sequence[Message], inputs: int, read: ScreenshotReader | None) -> str:
    """One step; ``new`` is what its turn added to the model input, of ``inputs`` messages in all."""
    fb, call = step.feedback, step.tool_call
    title = f"{call.name}" if call else "(no tool call)"
    parts = [f'<span class="label">model output</span>{_pre(step.raw_output, "raw")}']
    if call is not None:
        parts.append(f'<span class="label">tool call</span>{_pre(f"{call.name}({_json(call.arguments)})", "call")}')
    fb_rows = [("status", fb.status.value)]
    if fb.error is not None:
        fb_rows += [("error", fb.error.code.value), ("hint", fb.error.hint)]
    note = getattr(fb, "note", "")
    if note:
        fb_rows.append(("note", note))
    parts.append(f'<span class="label">feedback</span><table class="feedback">{_rows(fb_rows)}</table>')
    if fb.result is not None:
        parts.append(f'<span class="label">result</span>{_pre(_json(fb.result), "result")}')
    obs = fb.observation
    shot = ""
    if obs is not None:
        where = " / ".join(x for x in (obs.package, obs.activity) if x) or "-"
        parts.append(f'<span class="label">screen after the step <span class="meta">{e(where)}</span></span>{_pre(obs.screen, "screen")}')
        changes = getattr(obs, "changes", "")
        if changes:
            parts.append(f'<span class="label">changes</span>{_pre(changes, "changes")}')
        shot = _screenshot(obs.screenshot, read)
    if new:
        shown = "\n\n".join(f"[{m.role.value}] {m.content}" for m in new)
        parts.append(f"<details><summary>model input: {len(new)} new message(s) of {inputs}</summary>{_pre(shown, 'messages')}</details>")
    meta = (f"{step.usage.prompt_tokens} prompt + {step.usage.completion_tokens} output tokens · "
            f"plan {step.plan_seconds:.2f} s · act {step.act_seconds:.2f} s · {_when(step.started_at)}")
    body = f'<div class="cols{"" if shot else " noshot"}"><div>{"".join(parts)}</div>{shot}</div>'
    return (f'<section class="step {e(fb.status.value)}" data-step="{step.index}" id="step-{step.index}">'
            f'<header><h3>step {step.index + 1} · {e(title)}</h3><span class="meta">{e(meta)}</span></header>{body}</section>')


def _tokens(tokens: TokenUsage) -> str:
    own, sub, total = tokens.own, tokens.subagents, tokens.total
    text = f"{total.prompt_tokens} prompt + {total.completion_tokens} output"
    if not tokens.subagent_episodes:
        return text
    n = tokens.subagent_episodes
    return (f"{text} — own {own.prompt_tokens} prompt + {own.completion_tokens} output, sub-agents "
            f"({n} episode{'' if n == 1 else 's'}) {sub.prompt_tokens} prompt + {sub.completion_tokens} output")


def _page_usage(traj: Trajectory, shown: Sequence[Trajectory]) -> TokenUsage:
    """What ``traj`` cost, counting the sub-agent episodes among ``shown`` (when the caller had no store)."""
    by_parent: dict[str, list[Trajectory]] = {}
    for t in shown:
        if t.parent:
            by_parent.setdefault(t.parent, []).append(t)
    family, todo, seen = [], list(by_parent.get(traj.id, ())), {traj.id}
    while todo:
        t = todo.pop()
        if t.id not in seen:
            seen.add(t.id)
            family.append(t)
            todo.extend(by_parent.get(t.id, ()))
    return TokenUsage(own=own_usage(traj), subagents=sum((own_usage(t) for t in family), Usage()), subagent_episodes=len(family))


def _trajectory(traj: Trajectory, read: ScreenshotReader | None, tokens: TokenUsage) -> str:
    seconds = (traj.ended_at - traj.started_at).total_seconds() if traj.ended_at else None
    d = traj.device
    facts = [
        ("task", traj.task_id or "-"),
        ("status", traj.status.value),
        ("answer", traj.answer if traj.answer is not None else "-"),
        ("device", f"{d.serial} ({d.model or 'unknown model'}, {d.kind})"),
        ("source", traj.source.value),
        ("planner", f"{traj.planner} · release {traj.planner_release or '-'}"),
        ("harness release", traj.harness_release or "-"),
        ("collection", f"{traj.collection} · {traj.item}" if traj.collection else "-"),
        ("started", _when(traj.started_at)),
        ("duration", f"{seconds:.2f} s" if seconds is not None else "-"),
        ("tokens", _tokens(tokens)),
        ("plan / act time", f"{sum(s.plan_seconds for s in traj.steps):.2f} s / {sum(s.act_seconds for s in traj.steps):.2f} s"),
    ]
    if getattr(traj, "parent", None):
        facts.append(("delegated by", traj.parent))
    steps: list[str] = []
    before: tuple[Message, ...] = ()
    for i, step in enumerate(traj.steps):
        now = traj.messages_at(i)
        new = added_messages(before, now)  # the rest repeats the previous turn's input
        steps.append(_step(step, now if new is None else new, len(now), read))
        before = now
    cls, label = _outcome(traj)
    return (
        f'<article class="trajectory" id="{e(traj.id)}" data-trajectory="{e(traj.id)}">'
        f'<h1>{e(traj.goal)} <span class="badge {cls}">{e(label)}</span></h1>'
        f'<p class="meta">{e(traj.id)}</p><table class="facts">{_rows(facts)}</table>'
        f"<h2>Verdict</h2>{_verdict(traj)}"
        f'<h2>Steps ({len(traj.steps)})</h2>{"".join(steps) or "<p class=meta>no steps</p>"}</article>'
    )


def render_trajectory(traj: Trajectory, *, screenshots: ScreenshotReader | None = None, usage: TokenUsage | None = None) -> str:
    """One trajectory's article (facts, verdict with its evidence, every step), every value
    escaped, for a page of the caller's (the review app's item page)."""
    return _trajectory(traj, screenshots, usage or _page_usage(traj, [traj]))


def render_page(trajectories: Sequence[Trajectory], *, screenshots: ScreenshotReader | None = None, title: str | None = None,
                usage: Mapping[str, TokenUsage] | None = None) -> str:
    """One HTML document showing ``trajectories`` (a contents list first when there are several).

    ``usage`` (trajectory id → its tokens, as the store counts them) gives each trajectory's
    sub-agents' share; without it, the sub-agent episodes among ``trajectories`` are counted."""
    heading = title or (trajectories[0].goal if trajectories else "no trajectories")
    toc = ""
    if len(trajectories) != 1:
        items = "".join(
            f'<li><a href="#{e(t.id)}">{e(t.task_id or t.goal)}</a> — {e(_outcome(t)[1])} '
            f'<span class="meta">{e(t.id)} · {e(_when(t.started_at))}</span></li>'
            for t in trajectories
        )
        toc = f"<h1>{e(heading)}</h1><nav><ol>{items}</ol></nav>" if items else f"<h1>{e(heading)}</h1><p>none</p>"
    known = usage or {}
    body = "".join(_trajectory(t, screenshots, known.get(t.id) or _page_usage(t, trajectories)) for t in trajectories)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(heading)}</title><style>{CSS}</style></head>"
        f"<body><main>{toc}{body}</main></body></html>\n"
    )
