"""The tool-call grammar: which texts it lets through, built over a byte-level tokenizer (no model)."""

from __future__ import annotations

import json

import pytest

from planner_runtime.contract import ToolSpec
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.planners.local.grammar import GrammarError, ToolCallGrammars, tool_call_grammar


@pytest.fixture(scope="module")
def byte_tokenizer():
    """A tokenizer whose tokens are single bytes, so any text tokenizes one way."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(["<|endoftext|>"])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")


@pytest.fixture(scope="module")
def grammars(byte_tokenizer) -> ToolCallGrammars:
    return ToolCallGrammars(byte_tokenizer)


@pytest.fixture(scope="module")
def specs() -> list[ToolSpec]:
    return default_toolset().specs()


def accepts(grammars: ToolCallGrammars, tokenizer, tools: list[ToolSpec], name: str, arguments: dict | str) -> bool:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    text = f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'
    matcher = grammars.matcher(tools)
    ids = tokenizer(text, add_special_tokens=False).input_ids
    return matcher.consume_tokens(ids) and matcher.is_accepting()


def test_a_valid_call_of_each_kind_is_accepted(grammars, byte_tokenizer, specs):
    assert accepts(grammars, byte_tokenizer, specs, "set_alarm", {"hour": 7, "minutes": 30})
    assert accepts(grammars, byte_tokenizer, specs, "set_alarm", {"hour": 7, "minutes": 30, "label": "Gym"})
    assert accepts(grammars, byte_tokenizer, specs, "open_app", {"app": "Clock"})
    assert accepts(grammars, byte_tokenizer, specs, "type_text", {"element": 3, "text": "héllo \"x\""})
    assert accepts(grammars, byte_tokenizer, specs, "read_screen", {})
    assert accepts(grammars, byte_tokenizer, specs, "finish", {})


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("set_timer", {}),  # no such tool
        ("set_alarm", {"hour": 7, "minutes": 30, "second": 0}),  # extra argument
        ("set_alarm", {"hour": 7}),  # required argument missing
        ("set_alarm", {"hour": 24, "minutes": 0}),  # out of range
        ("set_alarm", {"hour": "7", "minutes": 30}),  # wrong type
        ("tap", {"element": -1}),  # below the minimum
        ("open_app", {"hour": 7, "minutes": 30}),  # another tool's arguments
        ("add_contact", {"name": ""}),  # minLength
        ("set_alarm", '{"hour":7,"minutes":30}'),  # the compact layout is fixed
    ],
)
def test_invalid_calls_are_rejected(grammars, byte_tokenizer, specs, name, arguments):
    assert not accepts(grammars, byte_tokenizer, specs, name, arguments)


def test_the_grammar_forces_what_only_one_tool_allows(grammars, byte_tokenizer, specs):
    matcher = grammars.matcher(specs)
    tok = byte_tokenizer
    assert matcher.consume_tokens(tok('<tool_call>\n{"name": "set_al', add_special_tokens=False).input_ids)
    assert tok.decode(matcher.compute_ff_tokens()) == 'arm", "arguments": {"hour": '


def test_each_distinct_tool_list_compiles_once(grammars, specs):
    before = grammars.compiled
    for _ in range(3):
        grammars.matcher(specs)
        grammars.matcher(specs[:2])
    renamed = [s.model_copy(update={"description": "other words"}) for s in specs]
    grammars.matcher(renamed)  # descriptions do not change the grammar
    assert grammars.compiled - before <= 2


def test_an_unsupported_schema_raises_grammar_error_every_time_but_compiles_once(grammars):
    odd = [ToolSpec(name="odd", description="", parameters={"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}})]
    before = grammars.compiled
    for _ in range(2):
        with pytest.raises(GrammarError, match="look-around"):
            grammars.matcher(odd)
    assert grammars.compiled - before == 1


def test_no_tools_is_no_grammar():
    with pytest.raises(GrammarError):
        tool_call_grammar([])
