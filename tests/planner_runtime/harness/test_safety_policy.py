"""A policy file a user got wrong is one clear line naming the file and what is wrong, never a
traceback and never a silently empty policy."""

from __future__ import annotations

import pytest

from planner_runtime.errors import ConfigError
from planner_runtime.harness.safety import Policy, Sensitivity


@pytest.mark.parametrize(("text", "says"), [
    ("- send\n- call\n", "expected a mapping with 'allow' and/or 'allow_tools', got a list"),
    ("send\n", "expected a mapping with 'allow' and/or 'allow_tools', got a string"),
    ("allow: send\n", "allow: expected a list, got a string"),
    ("allow_tools: {tap: yes}\n", "allow_tools: expected a list, got a mapping"),
    ("allow: [send, teleport]\n", "allow: unknown category 'teleport' (known: send, call, pay"),
    ("allow: [send]\nallow_everything: true\n", "allow_everything"),
    ("allow: [send\n", "while parsing"),
])
def test_a_malformed_policy_is_one_clear_line(tmp_path, text, says):
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        Policy.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and says in message and "\n" not in message


def test_a_policy_that_is_not_text_is_a_config_error(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"allow: [\xff\xfe send]\n")
    with pytest.raises(ConfigError, match="policy.yaml"):
        Policy.load(path)


def test_a_good_policy_and_an_empty_one_load(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("allow: [send, delete]\nallow_tools: [tap]\n", encoding="utf-8")
    assert Policy.load(path) == Policy(allow={Sensitivity.send, Sensitivity.delete}, allow_tools={"tap"})
    path.write_text("", encoding="utf-8")
    assert Policy.load(path) == Policy()
