"""Stored trajectories: the SQLite store, its schema and migrations, its queries, packed token ids,
content-addressed artifacts, and the sink protocol episodes write through."""
