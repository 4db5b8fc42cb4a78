"""A radix tree of prompt KV: every prompt token's keys and values are kept once, however many
requests' prompts contain them.

A node holds one stretch of tokens and its :class:`~planner_runtime.planners.local.attention.Segment`
(their keys and values at those positions); a prompt is the chain of nodes from the root to its
leaf. Inserting a prompt walks the tree as far as it matches, splits a node where the prompt
leaves it part-way, and computes KV only for the tokens past the match, which become one new
leaf. Insertion only shapes the tree: the new nodes have no KV until the caller builds them
(:meth:`PrefixTree.unbuilt`), so the prompts of requests admitted together are computed in one
batch. So requests offered the same tools share the system prompt and tool schemas, requests
offered different tools still share the general part, and the next step of an episode reuses
everything up to the turn that changed.

Nodes in use (a decoding row's leaf, or any node with children) are never dropped; past
``budget`` tokens the least recently used free leaves go first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any, Sequence

from planner_runtime.planners.local.prefix_cache import shared_length
from planner_runtime.planners.local.attention import Prefixes, Segment

SHORT_NODE = 64  # nodes this short are attended together with the rows' own keys (see attention.py)
_clock = count(1)


@dataclass(eq=False)
class Node:
    """``ids``: this node's own tokens, at positions ``start`` to ``start + len(ids)``."""

    ids: list[int]
    start: int
    segment: Segment | None  # None until built
    parent: Node | None = None
    children: dict[int, Node] = field(default_factory=dict)  # by first token
    users: int = 0  # decoding rows whose prompt ends here
    used: int = 0  # last use, for least-recently-used eviction

    @property
    def end(self) -> int:
        return self.start + len(self.ids)

    def chain(self) -> list[Node]:
        """The nodes from the root's first child down to this one (empty for the root)."""
        nodes: list[Node] = []
        node: Node | None = self
        while node is not None and node.parent is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


class PrefixTree:
    def __init__(self, budget: int) -> None:
        self.budget = budget  # tokens kept once no row needs them
        self.root = Node([], 0, None)

    def insert(self, ids: Sequence[int]) -> tuple[Node, int]:
        """The node whose chain holds exactly ``ids`` (the part not kept becomes one new, unbuilt
        leaf), and how many of them were kept with KV. The node counts a user until :meth:`release`."""
        node, at, reused = self.root, 0, 0
        stamp = next(_clock)
        while at < len(ids):
            child = node.children.get(ids[at])
            if child is None:
                break
            n = shared_length(child.ids, ids[at:])
            if n < len(child.ids):
                child = self._split(child, n)
            child.used = stamp
            node, at = child, at + n
            reused += n if child.segment is not None else 0
        if at < len(ids):
            rest = list(ids[at:])
            leaf = Node(rest, at, None, parent=node, used=stamp)
            node.children[rest[0]] = leaf
            node = leaf
        node.users += 1
        self._evict()
        return node, reused

    def unbuilt(self) -> list[Node]:
        """Nodes still without KV, each after its parent."""
        return sorted((n for n in self.nodes() if n.segment is None), key=lambda n: n.start)

    def drop_unbuilt(self) -> None:
        """Remove the nodes without KV (after their build failed); built nodes never hang below them."""
        for node in self.unbuilt():
            if node.parent is not None and node.parent.children.get(node.ids[0]) is node:
                del node.parent.children[node.ids[0]]

    def release(self, node: Node) -> None:
        node.users -= 1
        self._evict()

    def _split(self, node: Node, at: int) -> Node:
        """Cut ``node`` after its first ``at`` tokens; the first part becomes its new parent."""
        assert node.parent is not None and 0 < at < len(node.ids)
        first, rest = node.segment.split(at) if node.segment is not None else (None, None)
        upper = Node(node.ids[:at], node.start, first, parent=node.parent, used=node.used)
        node.parent.children[upper.ids[0]] = upper
        node.ids, node.start, node.segment, node.parent = node.ids[at:], node.start + at, rest, upper
        upper.children[node.ids[0]] = node
        return upper

    def nodes(self) -> list[Node]:
        found, todo = [], list(self.root.children.values())
        while todo:
            node = todo.pop()
            found.append(node)
            todo += node.children.values()
        return found

    @property
    def tokens(self) -> int:
        return sum(len(n.ids) for n in self.nodes())

    def _evict(self) -> None:
        nodes = self.nodes()
        kept = sum(len(n.ids) for n in nodes)
        while kept > self.budget:
            free = [n for n in nodes if not n.children and not n.users]
            if not free:
                return
            old = min(free, key=lambda n: n.used)
            assert old.parent is not None
            del old.parent.children[old.ids[0]]
            nodes.remove(old)
            kept -= len(old.ids)


def attended(seen: dict[Node, list[int]], queries: int, device: Any, window: int = 0, joined: dict | None = None) -> Prefixes:
    """The tree nodes the packed queries attend (``seen``: node -> query positions), root first.
    Nodes of at most :data:`SHORT_NODE` tokens go together into one short segment attended with
    the rows' own keys; ``joined`` keeps that concatenation between steps that see the same nodes."""
    import torch

    ordered = sorted(seen, key=lambda node: node.start)
    long = [n for n in ordered if len(n.ids) > SHORT_NODE]
    short = [n for n in ordered if len(n.ids) <= SHORT_NODE]
    segment = visible = None
    if short:
        key = tuple((n, n.segment) for n in short)
        segment = joined.get(key) if joined is not None else None
        if segment is None:
            segment = Segment.concatenated([n.segment for n in short])  # type: ignore[misc]
            if joined is not None:
                joined.clear()
                joined[key] = segment
        visible = torch.zeros(queries, segment.length, dtype=torch.bool)
        at = 0
        for n in short:
            visible[torch.tensor(seen[n])[:, None], torch.arange(at, at + len(n.ids))[None, :]] = True
            at += len(n.ids)
        visible = visible.to(device)
    return Prefixes(
        tuple(node.segment for node in long),  # type: ignore[misc]
        tuple(None if len(seen[node]) == queries else torch.tensor(seen[node], device=device) for node in long),
        window, segment, visible,
    )


def pieces(spans: list[tuple[int, int]], step: int) -> list[tuple[int, int, int]]:
    """``(start, end, window)`` pieces of packed prompt stretches (``spans``, in order) of at
    most ``step`` tokens: short stretches share a piece, a long one is cut, and ``window`` is the
    first cached position a piece's queries may see (the start of the stretch it begins in)."""
    pieces: list[tuple[int, int, int]] = []
    begin = window = 0
    for a, b in spans:
        if b - begin > step and a > begin:  # this stretch does not fit: close what is open
            pieces.append((begin, a, window))
            begin = window = a
        while b - begin > step:
            pieces.append((begin, begin + step, window))
            begin = begin + step
            window = a
    if spans and begin < spans[-1][1]:
        pieces.append((begin, spans[-1][1], window))
    return pieces
