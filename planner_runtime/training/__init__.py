"""Training: choosing SFT data from the trajectory store, fine-tuning a causal LM on it with TRL,
and the releases a run writes (:mod:`.data`, :mod:`.sft`, :mod:`.releases`); for RL, CARE's
rewards and advantages per group of rollouts and the controllers that retune it (:mod:`.care`,
:mod:`.controller`)."""

from planner_runtime.errors import PlannerRuntimeError


class TrainingError(PlannerRuntimeError):
    """Root of the training package's errors: bad data, a release that cannot be used as asked."""
