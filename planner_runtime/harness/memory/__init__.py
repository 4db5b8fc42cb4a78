"""Memory: records, the SQLite rows and FTS5 index, hybrid search with MiniLM embeddings, and its use in episodes."""
