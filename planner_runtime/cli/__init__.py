"""The `planner-agent` command line, one module per verb group; `main.app` is the console script."""
