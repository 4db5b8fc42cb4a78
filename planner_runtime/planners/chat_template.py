"""ChatML rendering with Qwen/Hermes-style tools: the one rendering the model, ``serve`` and training share.

SmolLM2 uses the same ``<|im_start|>``/``<|im_end|>`` turns as Qwen, but its bundled chat template
ignores tools. This renders what Qwen2.5's template renders: the tool signatures appended to the
system turn, assistant turns verbatim (their ``<tool_call>`` blocks included), and each run of
consecutive tool results as one user turn of ``<tool_response>`` blocks. Pure text, no tokenizer,
so the exact model input can be stored with every step and rebuilt without the model.

:func:`chat_turns` is the conversation as role/content turns; :func:`render_chat` writes those
turns as the prompt the local planner (and so ``serve``) tokenizes, and the SFT export writes the
same turns as its rows, which the model's own chat template renders to the same text. Training
input therefore cannot drift from what the model saw: both go through :func:`chat_turns`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners.renderings import DEFAULT, ID_PREFIX, UnknownRendering, tools_block
from planner_runtime.planners.toolcalls import OPEN

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant that operates an Android phone by calling tools."
# Starting the answer inside a call steers a small model into the right form; the parser then
# sees the whole block because the prefill is returned as part of the output.
TOOL_CALL_PREFILL = OPEN + '\n{"name": "'


@dataclass(frozen=True)
class ChatTurn:
    """One ChatML turn: ``<|im_start|>{role}\\n{content}<|im_end|>\\n``."""

    role: str
    content: str

    def as_dict(self) -> dict[str, str]:
        """The turn as a chat-template message (TRL's conversational rows, ``apply_chat_template``)."""
        return {"role": self.role, "content": self.content}

    def render(self) -> str:
        return f"{IM_START}{self.role}\n{self.content}{IM_END}\n"


def system_with_tools(system: str, tools: Sequence[ToolSpec], rendering: str = DEFAULT) -> str:
    """The system turn's text: the harness's system prompt followed by the tool signatures,
    written the way ``rendering`` writes them (:mod:`~planner_runtime.planners.renderings`)."""
    return f"{system}\n\n# Tools\n\n{tools_block(tools, rendering)}" if tools else system


def _response(msg: Message) -> str:
    return f"<tool_response>\n{msg.content}\n</tool_response>"


def chat_turns(messages: Sequence[Message], tools: Sequence[ToolSpec], rendering: str = DEFAULT) -> list[ChatTurn]:
    """``messages`` as the turns the model reads: the system prompt (or a default one) with the
    tool signatures first, and each run of consecutive tool results folded into one user turn."""
    rest = list(messages)
    system = rest.pop(0).content if rest and rest[0].role == Role.system else DEFAULT_SYSTEM
    turns = [ChatTurn("system", system_with_tools(system, tools, rendering))]
    run: list[str] = []  # the current run of tool results, flushed as one user turn
    for msg in rest:
        if msg.role == Role.tool:
            run.append(_response(msg))
            continue
        if run:
            turns.append(ChatTurn("user", "\n".join(run)))
            run = []
        turns.append(ChatTurn(msg.role.value, msg.content))
    if run:
        turns.append(ChatTurn("user", "\n".join(run)))
    return turns


def render_chat(messages: Sequence[Message], tools: Sequence[ToolSpec], *, prefill: str = "",
                rendering: str = DEFAULT) -> str:
    """The prompt text for ``messages``, ending with an open assistant turn and ``prefill``."""
    return "".join(turn.render() for turn in chat_turns(messages, tools, rendering)) + f"{IM_START}assistant\n{prefill}"


def render_conversation(messages: Sequence[Message], tools: Sequence[ToolSpec], completion: str,
                        rendering: str = DEFAULT) -> str:
    """The whole training text of one turn: the prompt, then ``completion`` (the assistant's raw
    output, a prefill included) closed as a turn; what a chat template renders for an SFT row."""
    return render_chat(messages, tools, rendering=rendering) + completion + f"{IM_END}\n"


def rendering_id(rendering: str = DEFAULT) -> str:
    """A rendering's identity in a release manifest: ``<prefix>:<digest>``, the digest taken over
    a fixed conversation rendered by it, so any change to how turns, tools or tool responses are
    written changes the id (and a release trained on the old text is refused, not misread)."""
    tool = ToolSpec(name="probe", description="A probe.", parameters={"type": "object", "properties": {"x": {"type": "integer"}}})
    messages = (Message(role=Role.system, content="S"), Message(role=Role.user, content="U"),
                Message(role=Role.assistant, content="A"), Message(role=Role.tool, content="T", tool_call_id="c"))
    text = render_conversation(messages, (tool,), "C", rendering)
    return f"{ID_PREFIX[rendering]}:" + hashlib.sha256(text.encode()).hexdigest()[:12]


def rendering_of(identity: str) -> str:
    """The rendering a manifest's ``rendering`` id names; :class:`UnknownRendering` for one this
    version cannot write exactly (another version's text)."""
    for name in ID_PREFIX:
        if rendering_id(name) == identity:
            return name
    known = ", ".join(rendering_id(name) for name in ID_PREFIX)
    raise UnknownRendering(f"prompt rendering {identity!r} is not one this version writes ({known})")
