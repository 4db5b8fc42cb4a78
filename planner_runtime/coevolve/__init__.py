"""Co-evolution of model and harness: failure analysis, proposals, and the rounds that turn
approved proposals into a new harness revision, a new dataset and a new release.

:mod:`.analysis` clusters a collection's verified failures (by first error code, first step that
differs from the task's demo, tool, app, category and domain) and gives success rates per
category and domain; :mod:`.proposals` turns those clusters, by fixed rules, into proposals (a
data recipe re-weighting, skill pitfalls, tool description edits, system prompt lines), each a
unified diff against the current file with the trajectories that motivated it; :mod:`.patches`
applies such a diff (pure Python), so a round can apply a proposal to a copy of the harness files
and never to the installed package. Nothing here changes a file the user did not name.
:mod:`.rounds` records rounds, :mod:`.stages` runs them, :mod:`.gate` decides whether a round's
release may be promoted, :mod:`.report` charts them.
"""

from planner_runtime.errors import PlannerRuntimeError


class CoevolveError(PlannerRuntimeError):
    """Root of the co-evolution package's errors: an unknown collection, a proposal file that is
    malformed or whose diff no longer applies."""


class ProposalError(CoevolveError):
    """A proposal file that cannot be used; the message names the file and the field."""
