"""The pure-Python unified diff: what it writes applies back exactly, a stale diff is refused
naming its hunk, and a diff that is not one is refused with the line."""

from __future__ import annotations

import pytest

from planner_runtime.coevolve.patches import PatchError, apply_diff, make_diff, parse_diff

OLD = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.mark.parametrize("new", [
    OLD.replace("line 3\n", "line three\n").replace("line 18\n", "line 18\nadded\n"),  # two hunks
    OLD + "last without newline",  # the new end has no newline
    "",  # everything removed
])
def test_a_diff_it_writes_turns_the_old_text_into_the_new(new):
    diff = make_diff(OLD, new, "skills/x/SKILL.md")
    assert diff.startswith("--- a/skills/x/SKILL.md\n+++ b/skills/x/SKILL.md\n")
    assert apply_diff(diff, OLD) == new


def test_no_newline_at_the_end_is_kept_both_ways():
    old, new = "a\nb", "a\nc"
    diff = make_diff(old, new, "f.txt")
    assert "\\ No newline at end of file" in diff and apply_diff(diff, old) == new


def test_a_diff_from_dev_null_creates_a_file_and_refuses_an_existing_one():
    diff = make_diff("", "name: r\n", "recipes/r.yaml", create=True)
    assert parse_diff(diff).creates and apply_diff(diff, None) == "name: r\n"
    with pytest.raises(PatchError, match="exists already"):
        apply_diff(diff, "something\n")


def test_a_hunk_moved_by_lines_above_still_applies_but_changed_context_is_refused():
    diff = make_diff(OLD, OLD.replace("line 10\n", "line ten\n"), "f")
    assert apply_diff(diff, "new first\nnew second\n" + OLD) == "new first\nnew second\n" + OLD.replace("line 10\n", "line ten\n")
    with pytest.raises(PatchError, match=r"hunk 1 \(at line 7\) does not match"):
        apply_diff(diff, OLD.replace("line 9\n", "line nine\n"))
    with pytest.raises(PatchError, match="does not exist"):
        apply_diff(diff, None)


@pytest.mark.parametrize("diff, words", [
    ("just text\n", "header"),
    ("--- a/f\n+++ b/f\n", "no hunks"),
    ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n", r"header says -2 \+2"),
    ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n", "more than one file"),
    ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n*a\n", "line 4"),
])
def test_what_is_no_unified_diff_is_refused_saying_why(diff, words):
    with pytest.raises(PatchError, match=words):
        parse_diff(diff)
