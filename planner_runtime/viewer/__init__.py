"""The trajectory viewer: one self-contained HTML page per trajectory (or per batch of failures).

Everything a reviewer needs to judge an episode is on the page — goal, task, device, releases,
the verdict with each check's evidence, and every step (raw model output, parsed tool call,
feedback, screen text, screenshot, tokens, timings). The page makes no request of its own: styles
are inline, screenshots are ``data:`` URIs, and every recorded string is HTML-escaped, because
screen text and model output are untrusted.
"""

from planner_runtime.viewer.page import render_page

__all__ = ["render_page"]
