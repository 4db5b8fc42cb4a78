"""The radix tree of prompt KV: prompts share their common starts, nodes split where prompts part,
only free leaves are dropped, least recently used first."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from planner_runtime.planners.local.attention import Segment  # noqa: E402
from planner_runtime.planners.local.prefix_tree import PrefixTree  # noqa: E402


def build(tree: PrefixTree) -> int:
    """Give every unbuilt node KV whose values are its token positions (so splits can be checked)."""
    built = 0
    for node in tree.unbuilt():
        assert node.parent is tree.root or node.parent.segment is not None  # parents come first
        positions = torch.arange(node.start, node.end, dtype=torch.float32)[None, None, :, None]
        node.segment = Segment((positions.clone(),), (positions.clone(),))
        built += len(node.ids)
    return built


def positions(node) -> list[int]:
    return [int(p) for seg in node.chain() for p in seg.segment.keys[0].flatten()]


def test_prompts_share_their_common_start_and_split_where_they_part():
    tree = PrefixTree(budget=1000)
    a, reused = tree.insert([1, 2, 3, 4, 5])
    assert reused == 0 and build(tree) == 5
    b, reused = tree.insert([1, 2, 3, 9, 9, 9])
    assert reused == 3 and build(tree) == 3  # only the part after the common start is computed
    assert [n.ids for n in b.chain()] == [[1, 2, 3], [9, 9, 9]] and [n.ids for n in a.chain()] == [[1, 2, 3], [4, 5]]
    assert positions(a) == [0, 1, 2, 3, 4] and positions(b) == [0, 1, 2, 3, 4, 5]  # the split kept every position's KV
    c, reused = tree.insert([1, 2])  # a prompt inside a node: split, nothing to compute
    assert reused == 2 and not tree.unbuilt() and c.chain()[-1].ids == [1, 2]
    assert tree.tokens == 8


def test_prompts_admitted_together_split_unbuilt_nodes_and_build_parents_first():
    tree = PrefixTree(budget=1000)
    tree.insert([1, 2, 3, 4])
    tree.insert([1, 2, 7, 8])  # splits the first, still unbuilt
    unbuilt = [(n.ids, n.start) for n in tree.unbuilt()]
    assert unbuilt[0] == ([1, 2], 0) and sorted(unbuilt[1:]) == [([3, 4], 2), ([7, 8], 2)]
    tree.drop_unbuilt()  # a failed build leaves nothing half made
    assert tree.tokens == 0 and tree.insert([1, 2])[1] == 0


def test_only_free_leaves_are_dropped_least_recently_used_first():
    tree = PrefixTree(budget=8)
    shared = [1, 2, 3]
    a, _ = tree.insert(shared + [4, 4])
    b, _ = tree.insert(shared + [5, 5])
    build(tree)
    tree.release(a)
    tree.release(b)
    assert tree.tokens == 7  # within budget: both kept for later prompts
    again, reused = tree.insert(shared + [4, 4])  # a is used again, so b is now the older
    assert again is a and reused == 5
    tree.release(a)
    c, _ = tree.insert(shared + [6, 6])
    build(tree)
    # over budget: the least recently used free leaf went; the shared start has children, so it stays
    assert sorted(n.ids for n in tree.nodes()) == [[1, 2, 3], [4, 4], [6, 6]]
    busy, _ = tree.insert([8] * 10)  # a node in use stays even past the budget
    build(tree)
    assert busy in tree.nodes() and c in tree.nodes()
    tree.release(busy)
    tree.release(c)
    assert tree.tokens <= 8 and busy not in tree.nodes()


def test_repeated_splits_never_keep_more_than_twice_the_kept_bytes():
    tree = PrefixTree(budget=10**6)
    held, _ = tree.insert(list(range(1000)))  # a decoding row's prompt, cut ever closer to its end
    build(tree)
    for at in (500, 750, 875, 938):
        other, _ = tree.insert(list(range(at)) + [-at])
        build(tree)
        tree.release(other)
    tree.budget = 100
    tree.release(tree.insert([-1])[0])  # any change drops free leaves past the new budget
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for n in tree.nodes() for t in n.segment.keys + n.segment.values}
    kept = sum(n.segment.nbytes for n in tree.nodes())
    assert sum(storages.values()) <= 1.5 * kept  # (before views were copied once they covered under half: 1.94x)
    assert positions(held) == list(range(1000))  # the row's prompt still reads its own positions
