"""Data from trajectories: exports for training (and, later, the review queue and recipes)."""
