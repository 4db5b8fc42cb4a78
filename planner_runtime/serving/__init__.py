"""Serving the planner over the OpenAI chat-completions API, so many harness workers share one model.

:mod:`wire` converts between our records and the API's JSON (used by the ``openai`` planner too),
:mod:`batch` decodes several chats together on the local model (requests join and leave the
running batch at step boundaries), :mod:`prefix_tree` keeps prompt KV once however many prompts
share it, :mod:`attention` lets packed rows attend it without copies, :mod:`engine` feeds
concurrent requests to the decoder on one worker thread (and drops those whose callers left),
:mod:`server` and :mod:`routes` are the HTTP front end behind ``planner-agent serve`` (Starlette on
uvicorn), :mod:`requests` reads its requests strictly, :mod:`schemas` checks and closes tool
schemas, and :mod:`sse` writes ``stream: true`` answers. Importing this package loads nothing heavy.
"""
