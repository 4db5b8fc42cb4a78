"""ChatML rendering with Qwen/Hermes-style tools, for models whose own template has none.

SmolLM2 uses the same ``<|im_start|>``/``<|im_end|>`` turns as Qwen, but its bundled chat template
ignores tools. This renders what Qwen2.5's template renders: the tool signatures appended to the
system turn, assistant turns verbatim (their ``<tool_call>`` blocks included), and each run of
consecutive tool results as one user turn of ``<tool_response>`` blocks. Pure text, no tokenizer,
so the exact model input can be stored with every step and rebuilt without the model.
"""

from __future__ import annotations

from typing import Sequence

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners.toolcalls import OPEN, render_tools

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant that operates an Android phone by calling tools."
# Starting the answer inside a call steers a small model into the right form; the parser then
# sees the whole block because the prefill is returned as part of the output.
TOOL_CALL_PREFILL = OPEN + '\n{"name": "'


def system_with_tools(system: str, tools: Sequence[ToolSpec]) -> str:
    """The system turn's text: the harness's system prompt followed by the tool signatures."""
    return f"{system}\n\n# Tools\n\n{render_tools(tools)}" if tools else system


def render_chat(messages: Sequence[Message], tools: Sequence[ToolSpec], *, prefill: str = "") -> str:
    """The prompt text for ``messages``, ending with an open assistant turn and ``prefill``."""
    parts: list[str] = []
    rest = list(messages)
    system = rest.pop(0).content if rest and rest[0].role == Role.system else DEFAULT_SYSTEM
    system = system_with_tools(system, tools)
    parts.append(f"{IM_START}system\n{system}{IM_END}\n")
    for i, msg in enumerate(rest):
        if msg.role == Role.tool:
            opens_run = i == 0 or rest[i - 1].role != Role.tool
            closes_run = i == len(rest) - 1 or rest[i + 1].role != Role.tool
            parts.append(
                (f"{IM_START}user" if opens_run else "")
                + f"\n<tool_response>\n{msg.content}\n</tool_response>"
                + (f"{IM_END}\n" if closes_run else "")
            )
        else:
            parts.append(f"{IM_START}{msg.role.value}\n{msg.content}{IM_END}\n")
    parts.append(f"{IM_START}assistant\n{prefill}")
    return "".join(parts)
