"""The viewer page's stylesheet and security policy, inlined so the page needs nothing else.

The Content-Security-Policy forbids scripts and every fetch except ``data:`` images: a page built
from untrusted screen text stays inert even if an escaping bug slipped through.
"""

from __future__ import annotations

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --mute: #57606a; --line: #d0d7de; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; }
main { max-width: 1200px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 20px; margin: 8px 0; }
h2 { font-size: 17px; margin: 24px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0; }
nav ol { padding-left: 20px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; white-space: nowrap; width: 1%; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 8px;
      margin: 4px 0; white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto;
      font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.trajectory { border-top: 4px solid var(--line); margin-top: 28px; }
.badge { display: inline-block; border-radius: 10px; padding: 1px 9px; font-size: 12px; font-weight: 600;
         color: #fff; background: var(--mute); }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.warn { background: var(--warn); }
.checks th { width: auto; } .checks th:first-child { width: 2em; } .checks td:nth-child(2) { width: 35%; }
.pass { color: var(--ok); font-weight: 700; } .fail { color: var(--bad); font-weight: 700; }
.step { border: 1px solid var(--line); border-radius: 8px; margin: 12px 0; padding: 10px 12px; }
.step.error, .step.blocked { border-left: 5px solid var(--bad); }
.step.ok { border-left: 5px solid var(--ok); }
.step.needs_confirmation { border-left: 5px solid var(--warn); }
.step header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.meta { color: var(--mute); font-size: 12px; }
.cols { display: grid; grid-template-columns: minmax(0, 1fr) 280px; gap: 12px; }
.cols.noshot { grid-template-columns: minmax(0, 1fr); }
.shot img { width: 100%; border: 1px solid var(--line); border-radius: 6px; }
.label { font-weight: 600; margin-top: 6px; display: block; }
details > summary { cursor: pointer; color: var(--mute); }
"""
