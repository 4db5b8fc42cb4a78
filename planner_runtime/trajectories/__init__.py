"""Stored trajectories: the SQLite store, its schema and migrations, queries, and content-addressed artifacts."""
