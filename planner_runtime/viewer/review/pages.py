"""The review app's HTML: the queue, an item with its episode and decision controls, a message.

Plain string building like :mod:`planner_runtime.viewer.page`, whose trajectory article the item
page embeds; every value from the store is escaped (screen text and model output are untrusted),
and the pages' security policy runs only the app's own script (``/review.js``), fetches only
from the app and posts forms only to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence
from urllib.parse import urlencode

from planner_runtime.data.review.flags import Reason
from planner_runtime.data.review.queue import STATUSES, ReviewDecision, ReviewItem
from planner_runtime.viewer.page import e
from planner_runtime.viewer.style import CSS

CSP = ("default-src 'none'; script-src 'self'; img-src data:; style-src 'unsafe-inline'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

EXTRA_CSS = """
.bar { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; padding: 8px 0; border-bottom: 1px solid var(--line); }
.bar input[type=text] { width: 12em; }
.queue td.detail { max-width: 520px; }
.decide { border: 2px solid var(--line); border-radius: 8px; padding: 10px 12px; margin: 12px 0; background: var(--bg); }
.decide textarea { width: 100%; min-height: 3em; }
.decide button { font-weight: 600; margin-right: 8px; }
.legend kbd { border: 1px solid var(--line); border-bottom-width: 2px; border-radius: 4px; padding: 0 5px; background: #fff; }
.notice { border-left: 5px solid var(--warn); padding: 6px 10px; background: #fff8c5; margin: 8px 0; }
.notice.bad { border-left-color: var(--bad); background: #ffebe9; }
.notice.ok { border-left-color: var(--ok); background: #dafbe1; }
"""


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"


def document(title: str, body: str, reviewer: str = "") -> str:
    """A whole page: the reviewer's name field on top (kept by the script), then ``body``."""
    bar = (f'<div class="bar"><a href="/">review queue</a><label>reviewer <input type="text" id="reviewer" name="reviewer" '
           f'form="decide" autocomplete="off" maxlength="80" value="{e(reviewer)}"></label>'
           f'<a id="start" href="/next">review next →</a></div>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}{EXTRA_CSS}</style></head>"
        f'<body><main>{bar}{body}</main><script src="/review.js"></script></body></html>\n'
    )


def message(title: str, text: str, reviewer: str = "", kind: str = "bad") -> str:
    return document(title, f'<h1>{e(title)}</h1><p class="notice {e(kind)}" id="message">{e(text)}</p>', reviewer)


def _label(value: bool | None) -> str:
    return "-" if value is None else ("success" if value else "failure")


def _filters(reason: str | None, status: str | None) -> str:
    def options(values: Sequence[str], chosen: str | None) -> str:
        return '<option value="">any</option>' + "".join(
            f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>' for v in values)

    return (f'<form method="get" action="/" class="bar" id="filters"><label>reason <select name="reason">'
            f'{options([r.value for r in Reason], reason)}</select></label><label>status <select name="status">'
            f'{options(STATUSES, status)}</select></label><button type="submit">filter</button></form>')


def queue_page(rows: Sequence[ReviewItem], *, reason: str | None, status: str | None, reviewer: str, note: str = "") -> str:
    """The queue, filtered; each row links to its item page."""
    body = "".join(
        f'<tr class="item {e(r.status)}" data-item="{e(r.id)}"><td><a href="/items/{e(r.id)}">{e(r.id)}</a></td>'
        f"<td>{e(r.reason)}</td><td>{r.priority}</td><td>{e(r.status)}{' · ' + e(r.resolution) if r.resolution else ''}"
        f"{' · ' + e(_label(r.label_success)) if r.label_success is not None else ''}</td>"
        f"<td>{r.reviews}/{r.required_reviews}</td><td>{e(r.leased_to() or '-')}</td><td>{e(r.trajectory_id)}</td>"
        f'<td class="detail">{e(r.detail)}</td></tr>'
        for r in rows
    )
    opened = sum(r.status == "open" for r in rows)
    start = urlencode({"reason": reason}) if reason else ""
    head = (f'<h1>Review queue</h1>{_filters(reason, status)}'
            + (f'<p class="notice ok" id="message">{e(note)}</p>' if note else "")
            + f'<p class="meta" id="counts">{len(rows)} item(s), {opened} open · '
              f'<a href="/next{"?" + e(start) if start else ""}">review the next open item</a></p>')
    table = ('<table class="queue"><tr><th>item</th><th>reason</th><th>priority</th><th>status</th><th>reviews</th>'
             f"<th>leased by</th><th>trajectory</th><th>why</th></tr>{body}</table>") if rows else '<p class="meta">no items</p>'
    return document("Review queue", head + table, reviewer)


def _decisions(rows: Sequence[ReviewDecision]) -> str:
    if not rows:
        return '<p class="meta">no decisions yet</p>'
    body = "".join(
        f'<tr class="decision"><td>{e(_when(d.decided_at))}</td><td>{e(d.reviewer)}</td><td>{e(d.decision)}</td>'
        f"<td>{e(_label(d.label_success))}</td><td>{e(d.note)}</td></tr>"
        for d in rows
    )
    return f'<table class="decisions"><tr><th>when</th><th>reviewer</th><th>decision</th><th>label</th><th>note</th></tr>{body}</table>'


def _controls(item: ReviewItem, verifier: bool | None, reason_filter: str | None) -> str:
    relabel_to = not verifier if verifier is not None else False  # the usual relabel says the verifier was wrong
    labels = "".join(f'<option value="{v}"{" selected" if (v == "success") == relabel_to else ""}>{v}</option>'
                     for v in ("success", "failure"))
    keep = f'<input type="hidden" name="next_reason" value="{e(reason_filter)}">' if reason_filter else ""
    return (
        f'<form method="post" action="/items/{e(item.id)}/decide" id="decide" class="decide">{keep}'
        f'<label>note <textarea name="note" id="note" maxlength="4000" placeholder="why (optional)"></textarea></label>'
        '<p><button type="submit" name="decision" value="approve" id="approve">approve</button>'
        '<button type="submit" name="decision" value="reject" id="reject">reject</button>'
        f'<button type="submit" name="decision" value="relabel" id="relabel">relabel as</button>'
        f'<select name="label" id="label">{labels}</select></p>'
        '<p class="legend meta" id="legend"><kbd>a</kbd> approve · <kbd>r</kbd> reject · <kbd>l</kbd> relabel as chosen · '
        '<kbd>n</kbd>/<kbd>j</kbd> skip to the next item · (keys work outside the text fields)</p></form>'
    )


def item_page(item: ReviewItem, decisions: Sequence[ReviewDecision], article: str, *, verifier: bool | None,
              reviewer: str, notice: str = "", reason_filter: str | None = None) -> str:
    """An item: why it was flagged, where its review stands, the controls, and the episode."""
    facts = [
        ("reason", item.reason), ("why", item.detail), ("priority", item.priority),
        ("status", item.status + (f" · {item.resolution} {_label(item.label_success) if item.label_success is not None else ''}"
                                  if item.resolution else "")),
        ("reviews", f"{item.reviews} of {item.required_reviews} needed"),
        ("leased by", f"{item.leased_to() or '-'}" + (f" until {_when(item.lease_until)}" if item.leased_to() else "")),
        ("verifier", _label(verifier)), ("flagged", _when(item.created_at)),
    ]
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    skip = {"skip": item.id, **({"reason": reason_filter} if reason_filter else {})}
    controls = _controls(item, verifier, reason_filter) if item.status == "open" else ""
    body = (
        f'<section id="item" data-item="{e(item.id)}" data-status="{e(item.status)}">'
        f'<h1>Review {e(item.id)} <span class="meta">{e(item.reason)}</span></h1>'
        + (f'<p class="notice" id="notice">{e(notice)}</p>' if notice else "")
        + f'<table class="facts">{rows}</table>{controls}'
        f'<p><a id="next" href="/next?{e(urlencode(skip))}">next item →</a></p>'
        f"<h2>Decisions</h2>{_decisions(decisions)}</section>{article}"
    )
    return document(f"Review {item.id}", body, reviewer)


SCRIPT = r"""(() => {
  "use strict";
  const KEY = "planner-agent-reviewer";
  const name = document.getElementById("reviewer");
  const form = document.getElementById("decide");
  let sent = false;  // one decision per page: a second key press must not post again
  const save = () => {
    const value = name.value.trim();
    localStorage.setItem(KEY, value);
    document.cookie = "reviewer=" + encodeURIComponent(value) + "; path=/; SameSite=Strict";
  };
  if (name) {
    if (!name.value) name.value = localStorage.getItem(KEY) || "";
    name.addEventListener("input", save);
    if (name.value) save();
  }
  if (form) form.addEventListener("submit", () => { sent = true; });
  const press = (id) => {
    if (!form || sent) return;
    if (!name.value.trim()) { name.focus(); return; }
    form.requestSubmit(document.getElementById(id));
  };
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    const tag = ev.target && ev.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    const key = ev.key.toLowerCase();
    if (key === "a") press("approve");
    else if (key === "r") press("reject");
    else if (key === "l") press("relabel");
    else if (key === "n" || key === "j") { const next = document.getElementById("next"); if (next) location.assign(next.href); }
    else return;
    ev.preventDefault();
  });
})();
"""
