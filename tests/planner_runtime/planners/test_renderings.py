"""The compact tool rendering: every tool as one signature line, a fraction of the json
rendering's tokens, pinned by the release that was trained on it."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.errors import ModelProvisionError
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.planners.chat_template import render_chat, rendering_id, rendering_of
from planner_runtime.planners.local.model import rendering_of_dir
from planner_runtime.planners.renderings import RENDERING_FILE, UnknownRendering, render_tools_compact, tools_block

SCROLL = ToolSpec(name="scroll", description="Scroll a list.", parameters={
    "type": "object", "required": ["direction"], "properties": {
        "direction": {"enum": ["down", "up"], "type": "string"},
        "element": {"anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}], "default": None},
        "dishes": {"type": "array", "items": {"type": "string"}},
        "percent": {"type": "integer", "minimum": 0, "maximum": 100}}})


def test_a_tool_is_one_line_with_its_arguments_types_and_which_may_be_left_out():
    assert render_tools_compact([SCROLL]).splitlines()[-1] == (
        'scroll(direction: "down"|"up", element?: integer >=0|null, dishes?: list[string], percent?: integer 0..100)'
        " - Scroll a list.")


def test_the_compact_tool_list_is_a_fraction_of_the_json_one():
    specs = default_toolset().specs()
    compact, full = tools_block(specs, "compact"), tools_block(specs, "json")
    assert len(compact) < len(full) / 3
    assert all(f"{t.name}(" in compact for t in specs)


def test_each_rendering_has_its_own_id_and_an_unknown_one_is_refused():
    messages = [Message(role=Role.user, content="Set an alarm")]
    assert "<tools>" in render_chat(messages, [SCROLL]) and "<tools>" not in render_chat(messages, [SCROLL], rendering="compact")
    assert rendering_of(rendering_id("compact")) == "compact" and rendering_of(rendering_id("json")) == "json"
    assert rendering_id("json") != rendering_id("compact")
    with pytest.raises(UnknownRendering, match="is not one this version writes"):
        rendering_of("chatml-compact:000000000000")  # the text another version wrote
    with pytest.raises(UnknownRendering, match="this version knows json, compact"):
        tools_block([SCROLL], "yaml")


def test_a_model_folder_names_the_rendering_it_was_trained_on(tmp_path):
    assert rendering_of_dir(tmp_path) == "json"  # any model not trained here
    (tmp_path / RENDERING_FILE).write_text("compact\n")
    assert rendering_of_dir(tmp_path) == "compact"
    (tmp_path / RENDERING_FILE).write_text("xml\n")
    with pytest.raises(ModelProvisionError, match="names prompt rendering 'xml'"):
        rendering_of_dir(tmp_path)
