"""Which split (train or test) a stored episode's task belongs to, from its task id alone.

Training and the data builder both keep held-out templates out of training data: a task of the
built-in suite has its own ``split`` (or the suite's stable draw); a task of a suite file that is
not built in gets the same stable draw :attr:`TaskSpec.split_name` makes when no split is set.
"""

from __future__ import annotations

import hashlib

from planner_runtime.tasks.spec import builtin_suite


def template_splits() -> dict[str, str]:
    """The split of every built-in task template, by template id."""
    return {t.template: t.split_name for t in builtin_suite().tasks}


def split_of(task_id: str | None, known: dict[str, str]) -> str | None:
    """The split of ``task_id``'s template; ``None`` for an episode that ran no task (a goal)."""
    if not task_id:
        return None
    template = task_id.split("@", 1)[0]
    if template in known:
        return known[template]
    # a task of a suite file: the same stable draw TaskSpec.split_name makes when no split is set
    return "test" if int(hashlib.sha1(template.encode()).hexdigest()[:8], 16) % 5 == 0 else "train"
