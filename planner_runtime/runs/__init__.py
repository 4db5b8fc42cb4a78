"""Runs of episodes: one goal on one phone, collections over a pool, replays of stored trajectories, task audits."""
