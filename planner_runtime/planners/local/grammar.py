"""Grammars that confine a local model's answer to one valid call of one of the offered tools.

The grammar (llguidance's Lark dialect) accepts exactly
``<tool_call>\\n{"name": "<tool>", "arguments": <JSON>}\\n</tool_call>``, where ``<JSON>`` must
match *that* tool's parameters schema, written compactly with the ``", "``/``": "`` separators the
system prompt shows. Compiling is cheap, but the tool list repeats every step, so each distinct
list is compiled once and every turn starts from a copy of the fresh matcher.

A grammar alone does not make a call close within a token budget: an array or a string can grow
until the budget cuts the JSON. So the decoder keeps one promise the grammar cannot: after each
sampled token it asks :meth:`ToolCallGrammars.closing` for a short way to finish the call from
there, and when that no longer fits in the tokens left it takes the token back and emits the
closing instead. Such a call is *cut*: it parses, but its last value is shorter than the model
meant, so the planner flags it and the harness never runs it. A planner may also cap strings
(and so arrays); a value that ends at such a cap counts as cut too (:func:`reaches_cap`).

A tool schema that names its properties but does not say whether others are allowed is closed
for the grammar (:func:`closed`): every such object gets ``additionalProperties: false``, which is
what users of tool calling expect (and what vLLM's strict JSON grammars do); the schema the model
reads in its prompt stays as written. ``serve`` and its batch decoder constrain calls that way.
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


# Keywords that let an object hold properties its ``properties`` do not name, or that combine
# schemas: closing an object that has one of them would change what it means.
_OPEN_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "$ref", "if")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "if", "then", "else", "contains", "additionalItems")


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


# The most characters one token adds to a string, near enough: a token that would pass the cap is
# masked, so a string the cap ended may stop up to this far short of it.
TOKEN_CHARS = 16


def items_cap(max_chars: int) -> int:
    """The most items an array holds under a string cap of ``max_chars``: about one per 8 characters."""
    return max(1, max_chars // 8)


def reaches_cap(value: Any, max_chars: int | None) -> bool:
    """Whether a string anywhere in ``value`` (a call's arguments) ends within a token's width of
    ``max_chars``, or an array holds :func:`items_cap` items: the grammar may have closed it at
    the cap, whatever the model would have written next. (A schema's own, smaller limit is
    never reached here.)"""
    if max_chars is None:
        return False
    if isinstance(value, str):
        return len(value) > max_chars - TOKEN_CHARS
    if isinstance(value, dict):
        return any(reaches_cap(v, max_chars) for v in value.values())
    if isinstance(value, list):
        return len(value) >= items_cap(max_chars) or any(reaches_cap(v, max_chars) for v in value)
    return False


def cap_arrays(schema: Any, max_items: int) -> Any:
    """``schema`` with a ``maxItems`` on every array that has none (or a larger one)."""
    if isinstance(schema, dict):
        capped = {k: cap_arrays(v, max_items) for k, v in schema.items()}
        if capped.get("type") == "array":
            capped["maxItems"] = max(capped.get("minItems", 0), min(capped.get("maxItems", max_items), max_items))
        return capped
    if isinstance(schema, list):
        return [cap_arrays(v, max_items) for v in schema]
    return schema


def tool_call_grammar(tools: Sequence[ToolSpec], max_string_chars: int | None = None) -> str:
    """The Lark grammar of one tool-call block for ``tools``; with ``max_string_chars``, strings
    hold at most that many characters and arrays about one item per 8 of them."""
    if not tools:
        raise GrammarError("a tool-call grammar needs at least one tool")
    head = json.dumps(f'{OPEN}\n{{"name": "')
    tail = json.dumps(f"}}\n{CLOSE}")
    rules = [f"start: {head} call {tail}", "call: " + " | ".join(f"call_{i}" for i in range(len(tools)))]
    for i, tool in enumerate(tools):
        params = tool.parameters
        if max_string_chars:
            params = cap_arrays(cap_strings(params, max_string_chars), items_cap(max_string_chars))
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
        self._closers: list[int] | None = None
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

    def admit(self, matcher: "llguidance.LLMatcher", token: int, left: int) -> list[int] | None:
        """Feed a sampled ``token`` to ``matcher`` with ``left`` tokens of the budget to go (it
        included); what to emit: ``[token]``, or, when the call could no longer close after it,
        the closing from before it (anything but ``[token]`` means the budget cut the call).
        ``None`` when the grammar rejects ``token``."""
        if not matcher.consume_token(token):
            return None
        if matcher.is_stopped() or self.closing(matcher, left - 1) is not None:
            return [token]
        matcher.rollback(1)
        finish = self.closing(matcher, left)  # fits, as it did before ``token``...
        if finish is None:  # ...unless no call fitted from the start (the planner warns of that)
            matcher.consume_token(token)
            return [token]
        matcher.consume_tokens(finish)
        return finish

    def closing(self, matcher: "llguidance.LLMatcher", limit: int) -> list[int] | None:
        """Tokens that finish the call from ``matcher``'s state, at most ``limit`` of them, or
        ``None`` when this way takes more. ``matcher`` is left as it was.

        Greedy: what the grammar forces, else the first of a few closing tokens it allows (a
        quote, a brace, a bracket, a one...), else its lowest allowed token (a single character).
        Not always the shortest finish, but one that always exists within ``limit`` once it has."""
        probe = matcher.deep_copy()
        out: list[int] = []
        while not probe.is_stopped():
            ff = probe.compute_ff_tokens()
            if not ff:
                token = next((t for t in self.closers if probe.validate_tokens([t]) == 1), None)
                ff = [_lowest_allowed(probe) if token is None else token]
            if len(out) + len(ff) > limit or not probe.consume_tokens(ff):
                return None
            out += ff
        return out

    @property
    def closers(self) -> list[int]:
        """Single tokens that end or shorten a JSON value, best first."""
        if self._closers is None:
            ids = [self._hf_tokenizer(text, add_special_tokens=False).input_ids for text in CLOSERS]
            self._closers = [t[0] for t in ids if len(t) == 1]
        return self._closers


# Tokens that end what is open ("}" before "," so an object closes once it may) or fill a value
# with the fewest characters; the tool-call's own closing text is forced by the grammar.
CLOSERS = ('"', "}", "]", ",", "1", "0", "false", "null", "[", "{", "a", "-", ":", "T", " ")


def _lowest_allowed(matcher: "llguidance.LLMatcher") -> int:
    bias = matcher.compute_logit_bias()  # one byte a token, 0 where it is not allowed
    return len(bias) - len(bias.lstrip(b"\x00"))


def closed(schema: Any, *, close_self: bool = True) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object schema that allows no
    extras of its own accord (``allOf`` parts are left open: each sees only its own properties)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(sub) for name, sub in out[key].items()}
    is_object = out.get("type") == "object" or (out.get("type") is None and "properties" in out)
    # Alternatives of a whole schema are closed like it; parts that add to an object's own
    # properties (its ``allOf``, or ``anyOf`` beside its ``properties``) must stay open.
    whole = not (is_object and "properties" in out)
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed(sub, close_self=whole or key == "prefixItems") for sub in out[key]]
    if isinstance(out.get("allOf"), list):
        out["allOf"] = [closed(sub, close_self=False) for sub in out["allOf"]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = closed(out[key], close_self=key not in ("not", "if", "then", "else"))
    if close_self and is_object and not any(k in out for k in _OPEN_KEYWORDS):
        out["additionalProperties"] = False
    return out


def closed_tools(tools: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """``tools`` with :func:`closed` parameter schemas: what their calls are constrained to."""
    return tuple(t.model_copy(update={"parameters": closed(t.parameters)}) for t in tools)
