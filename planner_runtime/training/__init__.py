"""Training: choosing SFT data from the trajectory store, fine-tuning a causal LM on it with TRL,
and the releases a run writes (:mod:`.data`, :mod:`.sft`, :mod:`.releases`); for RL, CARE's
rewards and advantages per group of rollouts and the controllers that retune it (:mod:`.care`,
:mod:`.controller`), a step's episodes as token sequences (:mod:`.rollout`), the trainer on TRL's
GRPO (:mod:`.rl`, :mod:`.rl_steps`) and its step log drawn as a page (:mod:`.rl_log`,
:mod:`.rl_report`)."""

from planner_runtime.errors import PlannerRuntimeError


class TrainingError(PlannerRuntimeError):
    """Root of the training package's errors: bad data, a release that cannot be used as asked."""
