"""The review queue: trajectories flagged for a person (low confidence, conflict, safety), the
reviewers' decisions, and the final labels the data builder honours."""

# Here rather than in flags, so `review` commands' options read it without importing the store.
LOGPROB_THRESHOLD = -1.5  # mean log-probability per sampled token below this: the model was guessing
