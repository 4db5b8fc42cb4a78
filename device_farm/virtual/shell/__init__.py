"""The phone's toybox-like shell: the POSIX-ish syntax and arithmetic, the session that runs
pipelines, and the commands (``commands``) with Android's output formats."""
