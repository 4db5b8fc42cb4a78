"""The planner over any OpenAI-compatible chat-completions server, and that API's wire format (used by `serve` too)."""
