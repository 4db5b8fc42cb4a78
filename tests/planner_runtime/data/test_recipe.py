"""Recipe files: the format of the shared brief loads as written, and every bad case (weights that
sum to 0, unknown buckets, unknown keys, weights that are no number or negative, sizes and caps
below 1) is refused naming the file, the line and the field."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from planner_runtime.data.recipe import RecipeError, load_recipe, recipe_problems

FULL = """\
name: round-1            # required, [a-z0-9._-]+
select:                  # which trajectories are candidates (all optional)
  stores: []             # unused by the file itself; the CLI gives --store
  collections: [c1, c2]
  split: train           # train | test | all (default train)
  success: true          # default true; false never trains but analysis may
  since: 2026-01-01
weights:                 # multiplicative per dimension; a bucket not listed weighs 1.0; 0 drops it
  category: {tool: 1.0, memory: 2.0, skills: 1.5, subagent: 2.0}
  difficulty: {easy: 0.5, medium: 1.0, hard: 2.0}
  source: {sandbox: 1.0, simulated: 1.0, real: 1.0}          # trajectory.source
  data_source: {demo: 1.0, teacher: 1.0, self: 1.0}          # trajectory.data_source
  domain: {banking: 2.0}                                      # the task's domain
caps:
  per_task: 4            # at most this many trajectories of one task template
dedup: true              # identical call sequences of one task instance count once
size: 300                # how many to draw (with replacement only if allow_repeats: true)
seed: 0
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shared_format_loads_as_written(tmp_path):
    recipe = load_recipe(_write(tmp_path, FULL))
    assert recipe.name == "round-1" and recipe.size == 300 and recipe.seed == 0 and recipe.per_task == 4 and recipe.dedup
    assert recipe.select.collections == ("c1", "c2") and recipe.select.split == "train" and recipe.select.success is True
    assert recipe.select.since == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert recipe.weight("category", "memory") == 2.0 and recipe.weight("domain", "banking") == 2.0
    assert recipe.weight("domain", "weather") == 1.0  # not listed: 1.0
    assert recipe.text == FULL and len(recipe.sha256) == 64 and not recipe.allow_repeats
    with pytest.raises(Exception):  # frozen
        recipe.size = 3  # type: ignore[misc]


def test_defaults_need_only_a_name_and_a_size(tmp_path):
    recipe = load_recipe(_write(tmp_path, "name: small\nsize: 5\n"))
    assert (recipe.select.split, recipe.select.success, recipe.dedup, recipe.per_task, recipe.seed) == ("train", True, True, None, 0)


def _one(tmp_path: Path, text: str) -> RecipeError:
    _, problems = recipe_problems(_write(tmp_path, text))
    assert problems, "the recipe was accepted"
    return problems[0]


@pytest.mark.parametrize("text, line, field, says", [
    # weights that sum to 0 over a dimension: nothing could ever be drawn
    ("name: a\nsize: 3\nweights:\n  category: {tool: 0, memory: 0, skills: 0, subagent: 0}\n",
     4, "weights.category", "every category bucket weighs 0"),
    ("name: a\nsize: 3\nweights:\n  source: {sandbox: 0.0, simulated: 0, real: 0}\n", 4, "weights.source", "nothing could be drawn"),
    # unknown buckets, each dimension's own
    ("name: a\nsize: 3\nweights:\n  category: {tool: 1, gui: 2}\n", 4, "weights.category.gui", "unknown category 'gui'"),
    ("name: a\nsize: 3\nweights:\n  difficulty:\n    easy: 1\n    extreme: 2\n", 6, "weights.difficulty.extreme", "easy, hard, medium"),
    ("name: a\nsize: 3\nweights:\n  domain: {bankin: 2}\n", 4, "weights.domain.bankin", "unknown domain 'bankin'"),
    ("name: a\nsize: 3\nweights:\n  data_source: {human: 2}\n", 4, "weights.data_source.human", "demo, teacher, self"),
    ("name: a\nsize: 3\nweights:\n  source: {emulator: 2}\n", 4, "weights.source.emulator", "sandbox, simulated, real"),
    ("name: a\nsize: 3\nweights:\n  calls: {many: 2}\n", 4, "weights.calls.many", "zero, one, two, three_plus"),
    # a bucket written as a number (YAML reads `1:` as one): named as written, with the buckets
    ("name: a\nsize: 3\nweights:\n  calls:\n    zero: 0\n    1: 2\n", 6, "weights.calls.1", "a bucket is a name, not 1"),
    # unknown keys, at every level
    ("name: a\nsize: 3\nsizes: 4\n", 3, "sizes", "unknown key 'sizes'"),
    ("name: a\nsize: 3\nselect:\n  colection: c1\n", 4, "select.colection", "unknown key 'colection'"),
    ("name: a\nsize: 3\nweights:\n  capability: {tool: 1}\n", 4, "weights.capability", "unknown key 'capability'"),
    ("name: a\nsize: 3\ncaps:\n  per_template: 2\n", 4, "caps.per_template", "unknown key"),
    # weights that are no number, negative or not finite
    ("name: a\nsize: 3\nweights:\n  category:\n    tool: -1\n", 5, "weights.category.tool", "0 or more"),
    ("name: a\nsize: 3\nweights:\n  category:\n    tool: heavy\n", 5, "weights.category.tool", "got 'heavy'"),
    ("name: a\nsize: 3\nweights:\n  category:\n    tool: '2'\n", 5, "weights.category.tool", "a number"),
    ("name: a\nsize: 3\nweights:\n  category:\n    tool: .inf\n", 5, "weights.category.tool", "a number"),
    # sizes and caps below 1, and other values
    ("name: a\nsize: 0\n", 2, "size", "greater than or equal to 1"),
    ("name: a\nsize: 3\ncaps:\n  per_task: 0\n", 4, "caps.per_task", "greater than or equal to 1"),
    ("name: a\nsize: 2.5\n", 2, "size", "integer"),
    ("name: a\n", 1, "size", "required"),
    ("name: Round One\nsize: 3\n", 1, "name", "lowercase"),
    ("name: a\nsize: 3\nselect:\n  split: dev\n", 4, "select.split", "'train', 'test' or 'all'"),
    ("name: a\nsize: 3\nselect:\n  success: yes please\n", 4, "select.success", "boolean"),
    ("name: a\nsize: 3\nweights: [tool]\n", 3, "weights", "expected a mapping"),
    ("name: a\n  size: 3\n", 2, "yaml", "not allowed"),
])
def test_a_bad_recipe_names_its_line_and_field(tmp_path, text, line, field, says):
    problem = _one(tmp_path, text)
    assert (problem.line, problem.field) == (line, field), str(problem)
    assert says in problem.message
    assert str(problem).startswith(f"{tmp_path / 'recipe.yaml'}:{line}: {field}: ")
    with pytest.raises(RecipeError):
        load_recipe(tmp_path / "recipe.yaml")


def test_a_zero_weight_for_some_buckets_is_allowed(tmp_path):
    recipe = load_recipe(_write(tmp_path, "name: a\nsize: 3\nweights:\n  category: {subagent: 0}\n"))
    assert recipe.weight("category", "subagent") == 0.0 and recipe.weight("category", "tool") == 1.0


def test_every_problem_is_listed_in_file_order(tmp_path):
    _, problems = recipe_problems(_write(tmp_path, "name: a\nsize: 0\ncaps:\n  per_task: -2\nextra: 1\n"))
    assert [(p.line, p.field) for p in problems] == [(2, "size"), (4, "caps.per_task"), (5, "extra")]


def test_a_missing_file_is_one_problem(tmp_path):
    with pytest.raises(RecipeError, match="recipe.yaml: file: "):
        load_recipe(tmp_path / "recipe.yaml")
