"""Serving the planner over the OpenAI chat-completions API, so many harness workers share one model.

:mod:`engine` feeds concurrent requests to the local model's batch decoder
(:mod:`planner_runtime.planners.local.batch`) on one worker thread, and drops those whose callers
left; :mod:`server` and :mod:`routes` are the HTTP front end behind ``planner-agent serve``
(Starlette on uvicorn), :mod:`requests` reads its requests strictly, :mod:`schemas` checks tool
definitions, and :mod:`sse` writes ``stream: true`` answers. The wire format itself lives with
the OpenAI client (:mod:`planner_runtime.planners.openai.wire`). This package imports planners,
never the reverse; importing it loads nothing heavy.
"""
