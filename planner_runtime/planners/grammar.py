"""Grammars that confine a local model's answer to one valid call of one of the offered tools.

The grammar (llguidance's Lark dialect) accepts exactly
``<tool_call>\\n{"name": "<tool>", "arguments": <JSON>}\\n</tool_call>``, where ``<JSON>`` must
match *that* tool's parameters schema, written compactly with the ``", "``/``": "`` separators the
system prompt shows. Compiling is cheap, but the tool list repeats every step, so each distinct
list is compiled once and every turn starts from a copy of the fresh matcher.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import ToolSpec
from planner_runtime.errors import PlannerError
from planner_runtime.planners.toolcalls import CLOSE, OPEN

if TYPE_CHECKING:
    import llguidance

# The JSON compiler's layout options: no free whitespace, so the model cannot stall in blanks.
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class GrammarError(PlannerError):
    """No grammar could be built for a tool list (a schema the JSON compiler does not support)."""


def cap_strings(schema: Any, max_chars: int) -> Any:
    """``schema`` with a ``maxLength`` on every string that has none: a small model that keeps
    writing inside a string would otherwise run out of tokens before the call closes."""
    if isinstance(schema, dict):
        capped = {k: cap_strings(v, max_chars) for k, v in schema.items()}
        # A pattern or format fixes its own length (a date needs 10 characters, whatever the cap).
        free = not any(k in capped for k in ("maxLength", "enum", "const", "pattern", "format"))
        if capped.get("type") == "string" and free:
            capped["maxLength"] = max(max_chars, capped.get("minLength", 0))
        return capped
    if isinstance(schema, list):
        return [cap_strings(v, max_chars) for v in schema]
    return schema


def tool_call_grammar(tools: Sequence[ToolSpec], max_string_chars: int | None = None) -> str:
    """The Lark grammar of one tool-call block for ``tools`` (strings capped if asked)."""
    if not tools:
        raise GrammarError("a tool-call grammar needs at least one tool")
    head = json.dumps(f'{OPEN}\n{{"name": "')
    tail = json.dumps(f"}}\n{CLOSE}")
    rules = [f"start: {head} call {tail}", "call: " + " | ".join(f"call_{i}" for i in range(len(tools)))]
    for i, tool in enumerate(tools):
        params = cap_strings(tool.parameters, max_string_chars) if max_string_chars else tool.parameters
        schema = {**params, "x-guidance": JSON_LAYOUT}
        name = json.dumps(f'{tool.name}", "arguments": ', ensure_ascii=False)
        rules.append(f"call_{i}: {name} %json {json.dumps(schema, ensure_ascii=False)}")
    return "\n".join(rules) + "\n"


def tools_key(tools: Sequence[ToolSpec]) -> str:
    """What the grammar depends on: names and schemas, in order (descriptions do not matter)."""
    return json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True, ensure_ascii=False)


class ToolCallGrammars:
    """Compiles and caches tool-call grammars for one tokenizer.

    ``matcher(tools)`` returns a fresh :class:`llguidance.LLMatcher` at the start of the block;
    it raises :class:`GrammarError` when the tool list cannot be compiled (and remembers that, so
    a bad list costs one attempt, not one per step).
    """

    def __init__(self, hf_tokenizer: Any, *, capacity: int = 16) -> None:
        self._hf_tokenizer = hf_tokenizer
        self._tokenizer: llguidance.LLTokenizer | None = None
        self._cache: OrderedDict[str, llguidance.LLMatcher | str] = OrderedDict()
        self.capacity = capacity
        self.compiled = 0  # how many grammars were built, for tests and benchmarks

    @property
    def tokenizer(self) -> "llguidance.LLTokenizer":
        if self._tokenizer is None:
            import llguidance.hf

            try:
                self._tokenizer = llguidance.hf.from_tokenizer(self._hf_tokenizer)
            except ValueError as exc:  # a slow (pure-Python) tokenizer
                raise GrammarError(f"llguidance cannot use this tokenizer: {exc}") from exc
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def matcher(self, tools: Sequence[ToolSpec], max_string_chars: int | None = None) -> "llguidance.LLMatcher":
        """A fresh matcher; strings hold at most ``max_string_chars`` characters (``None``: no cap).
        The caller sets the cap per call, as it follows that call's token budget."""
        key = f"{max_string_chars}|{tools_key(tools)}"
        template = self._cache.get(key)
        if template is None:
            template = self._compile(tools, max_string_chars)
            self._cache[key] = template
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        if isinstance(template, str):
            raise GrammarError(template)
        return template.deep_copy()

    def _compile(self, tools: Sequence[ToolSpec], cap: int | None) -> "llguidance.LLMatcher | str":
        import llguidance

        self.compiled += 1
        try:
            grammar = tool_call_grammar(tools, cap)
        except GrammarError as exc:
            return str(exc)
        try:
            matcher = llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)
        except (ValueError, RuntimeError) as exc:  # API-level misuse; grammar errors set is_error()
            return f"cannot constrain tool calls for {[t.name for t in tools]}: {exc}"
        if matcher.is_error():
            return f"cannot constrain tool calls for {[t.name for t in tools]}: {matcher.get_error()}"
        return matcher
