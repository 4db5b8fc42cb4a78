"""Proposals from a real collection's failures: each targets the file its rule names, cites the
trajectories that motivated it, applies cleanly to a copy of that file with the expected change,
comes out the same twice, and a proposal file is checked field by field on load."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
import yaml

from planner_runtime.coevolve import ProposalError
from planner_runtime.coevolve.analysis import analyze
from planner_runtime.coevolve.proposals import apply, load_proposal, propose, source_root, write_proposals
from planner_runtime.trajectories.store import TrajectoryStore

BASE_RECIPE = """# the team's recipe
name: round-1
select:
  collections: [c1]
weights:
  category: {tool: 1.0, memory: 2.0}
  domain: {clock: 0}   # dropped on purpose
  difficulty: {hard: 2.0}
size: 300   # kept as written
"""


@pytest.fixture(scope="module")
def analysis(failed_collection):
    path, collection, _ = failed_collection
    with TrajectoryStore(path, create=False) as store:
        return analyze(store, collection)


def _copy(targets, root: Path) -> None:
    for target in targets:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source_root() / target, root / target)


def test_each_rule_targets_its_file_and_cites_the_failures_behind_it(analysis, failed_collection):
    _, collection, ids = failed_collection
    proposals, notes = propose(analysis)
    assert notes == []
    by_target = {p.target: p for p in proposals}
    assert set(by_target) == {
        f"recipes/after-{collection.replace('_', '-')}.yaml", "skills/clock-set-alarm/SKILL.md",
        "skills/weather-check/SKILL.md", "skills/messages-send/SKILL.md",
        "planner_runtime/harness/tools/clock.py", "planner_runtime/harness/episode.py"}
    assert [p.kind for p in proposals] == ["recipe", "skill", "skill", "skill", "tool_description", "system_prompt"]
    alarm = by_target["skills/clock-set-alarm/SKILL.md"]
    assert alarm.motivation.trajectories == (ids["clock.set_alarm"],) and alarm.motivation.count == 1
    assert "invalid_arguments" in alarm.diff and '{"hour": 31, "minutes": 30}' in alarm.diff
    assert "`weather_forecast` was called where `weather_now`" in by_target["skills/weather-check/SKILL.md"].diff
    tool = by_target["planner_runtime/harness/tools/clock.py"]
    assert tool.motivation.cluster["parameter"] == "hour" and tool.motivation.trajectories == (ids["clock.set_alarm"],)
    prompt = by_target["planner_runtime/harness/episode.py"]
    assert prompt.motivation.trajectories == (ids["messages.send_text"],)
    recipe = proposals[0]
    assert set(recipe.motivation.trajectories) == {ids[t] for t in ("clock.set_alarm", "weather.now", "messages.send_text")}


def test_every_diff_applies_to_a_copy_and_makes_the_change_it_says(analysis, tmp_path):
    proposals, _ = propose(analysis)
    _copy([p.target for p in proposals if p.kind != "recipe"], tmp_path)
    for p in proposals:
        assert apply(p, tmp_path) == [tmp_path / p.target]
    recipe = yaml.safe_load((tmp_path / proposals[0].target).read_text())
    assert recipe["weights"]["category"] == {"tool": 3.0}  # 3 of 3 failed: the bound, ×3
    assert recipe["weights"]["domain"] == {"clock": 3.0, "messages": 3.0, "weather": 2.0}  # 1 of 2: ×2
    tree = ast.parse((tmp_path / "planner_runtime/harness/tools/clock.py").read_text())
    hour = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "hour")
    description = next(k.value.value for k in hour.value.keywords if k.arg == "description")
    assert "less than or equal to 23" in description and "31" in description
    prompt = next(n for n in ast.parse((tmp_path / "planner_runtime/harness/episode.py").read_text()).body
                  if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SYSTEM_PROMPT")
    assert "instead of running out of steps" in ast.literal_eval(prompt.value)
    assert "Pitfall" in (tmp_path / "skills/clock-set-alarm/SKILL.md").read_text().splitlines()[-1]
    with pytest.raises(ProposalError, match="installed runtime's own tree"):
        apply(proposals[1], source_root())


def test_a_base_recipe_is_reweighted_in_place_keeping_the_rest_and_its_dropped_buckets(analysis, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("team.yaml").write_text(BASE_RECIPE)
    proposals, _ = propose(analysis, recipe=Path("team.yaml"))
    recipe = proposals[0]
    assert recipe.kind == "recipe" and recipe.target == "team.yaml"
    root = tmp_path / "round"
    root.mkdir()
    shutil.copy("team.yaml", root / "team.yaml")
    apply(recipe, root)
    text = (root / "team.yaml").read_text()
    data = yaml.safe_load(text)
    assert data["weights"]["category"] == {"tool": 3.0, "memory": 2.0}
    assert data["weights"]["domain"] == {"clock": 0, "messages": 3.0, "weather": 2.0}  # clock stays dropped
    assert data["weights"]["difficulty"] == {"hard": 2.0}
    assert text.startswith("# the team's recipe\nname: round-1\n") and "size: 300   # kept as written" in text


def test_two_runs_write_the_same_proposals_and_never_overwrite(analysis, tmp_path):
    first, second = propose(analysis)[0], propose(analysis)[0]
    assert [p.to_json() for p in first] == [p.to_json() for p in second]
    paths = write_proposals(first, tmp_path / "out")
    assert [load_proposal(p).to_json() for p in paths] == [p.to_json() for p in first]
    before = paths[0].read_text()
    with pytest.raises(ProposalError, match="exists"):
        write_proposals(first, tmp_path / "out")
    assert paths[0].read_text() == before


def test_a_proposal_file_is_checked_and_its_problem_named(analysis, tmp_path):
    proposals, _ = propose(analysis)
    good = next(p for p in proposals if p.kind == "skill").to_json()
    cases = [
        ({k: v for k, v in good.items() if k != "summary"}, "summary: missing"),
        ({**good, "kind": "magic"}, "kind: unknown kind 'magic'"),
        ({**good, "target": "../etc/passwd"}, "target: must be a relative path"),
        ({**good, "motivation": {"cluster": {}, "trajectories": "t1", "count": 1}}, "motivation.trajectories"),
        ({**good, "diff": "not a diff"}, "diff: no '--- a/FILE'"),
    ]
    for n, (data, words) in enumerate(cases):
        path = tmp_path / f"p{n}.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ProposalError, match=words) as caught:
            load_proposal(path)
        assert str(path) in str(caught.value)
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": 1,\n')
    with pytest.raises(ProposalError, match="line 2: not JSON"):
        load_proposal(broken)
    # a diff whose file changed since is refused when checked against a tree
    root = tmp_path / "tree"
    _copy([good["target"]], root)
    path = tmp_path / "good.json"
    path.write_text(json.dumps(good))
    assert load_proposal(path, root).id == good["id"]
    target = root / good["target"]
    target.write_text(target.read_text().replace("- Then call `finish`", "- Finally call `finish`"))
    with pytest.raises(ProposalError, match=r"good.json: diff: no longer applies"):
        load_proposal(path, root)


def test_against_a_harness_revision_every_harness_proposal_edits_its_files_and_the_revision_stays_sound(analysis, tmp_path):
    from planner_runtime.harness.revision import load_revision
    from planner_runtime.harness.revision.files import check_revision, export_current

    base = export_current(tmp_path / "base")
    proposals, notes = propose(analysis, harness=base)
    assert notes == []
    targets = {p.target for p in proposals if p.kind != "recipe"}
    assert targets == {"skills/clock-set-alarm/SKILL.md", "skills/weather-check/SKILL.md", "skills/messages-send/SKILL.md",
                       "tool_descriptions.yaml", "system_prompt.txt"}
    revised = tmp_path / "revised"
    shutil.copytree(base, revised)
    for p in proposals:
        if p.kind != "recipe":
            assert apply(p, revised) == [revised / p.target]
    assert check_revision(revised) == []
    revision = load_revision(revised)
    assert "instead of running out of steps" in revision.system_prompt
    assert "31" in revision.tool_descriptions["set_alarm"] and "less than or equal to 23" in revision.tool_descriptions["set_alarm"]
    before = load_revision(base).tool_descriptions
    assert {k for k in before if before[k] != revision.tool_descriptions[k]} == {"set_alarm"}  # one line changed, no other
