"""``planner-agent bench``: planners side by side on a suite, scored per category, domain and
difficulty (:mod:`.runner` runs and reads back, :mod:`.stats` computes, :mod:`.report` and
:mod:`.page` present)."""
