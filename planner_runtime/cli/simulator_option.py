"""``--simulator URL``, the option of the verbs that run task episodes (``run``, ``collect``,
``bench``): an OpenAI-compatible server that writes the simulated services' responses as free
text, each checked against the world afterwards (a contradiction leaves the episode unscored; a
server that is down or answers nonsense falls back to the structured result)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner_runtime.errors import ConfigError

if TYPE_CHECKING:  # its http client is imported only by a command that runs episodes
    from planner_runtime.harness.tools.simulated.llm import LlmSimulator

SIMULATOR_HELP = ("An OpenAI-compatible server (http://host:port) that writes the simulated services' responses as free "
                  "text, checked against their world (default: the deterministic simulator's structured responses).")


def simulator_address(value: str | None) -> str | None:
    """``value`` checked: an http(s) address, or ``None``. Raises :class:`ConfigError`."""
    if value is None:
        return None
    if not value.startswith(("http://", "https://")) or len(value) < len("http://x"):
        raise ConfigError(f"--simulator {value!r}: give an http(s):// address of an OpenAI-compatible server")
    return value.rstrip("/")


def llm_simulator(address: str | None) -> LlmSimulator | None:
    if not address:
        return None
    from planner_runtime.harness.tools.simulated.llm import LlmSimulator

    return LlmSimulator(address)
