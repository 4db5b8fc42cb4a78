"""Simulated tools: services a phone assistant uses that no sandbox app provides, declared in
files (:mod:`.family`) and run against the episode's world state (:mod:`.world`), either
deterministically (the default: tests, CI, the bench) or with an LLM writing the responses
(:mod:`.llm`), whose text is checked against the world afterwards. :mod:`.tool` makes them
tools of the one funnel, so they meet the same argument checks and safety gate as phone tools
and mix with them in one episode. This package's ``__init__`` imports nothing, so the tool
context can name a world without an import cycle.
"""
