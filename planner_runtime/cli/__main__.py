"""``python -m planner_runtime.cli``: the ``planner-agent`` command, for a process that starts another
with the same interpreter (a round's stages)."""

from planner_runtime.cli.main import app

app(prog_name="planner-agent")
