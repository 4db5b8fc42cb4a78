"""The review queue: trajectories flagged for a person (low confidence, conflict, safety), the
reviewers' decisions, and the final labels the data builder honours."""
