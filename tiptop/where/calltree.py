"""A refresh's call stacks as a tree, for ``--where``'s text and json and the live ``f``
window (``tiptop.live.where``): pure, no I/O.

Two views of the same stacks (``tiptop.where.profile.Stack``, outermost caller first):

* **bottom-up** (the default, "each hot function with its callers"): the first level is
  each function where samples were taken, by its own samples (the flat list of the
  hottest functions); beneath each, the functions that called it, and theirs, each with
  the samples taken through that path.
* **top-down** ("callers to callees"): the first level is each outermost frame; beneath
  each, the functions it called, each with every sample taken in it or beneath it.

A node's share is its weight's part of the tree's whole weight (the refresh's samples, or
the time off CPU), in percent. :func:`tree_rows` lays a tree out as rows, cut at a depth,
below a share, and where a node is not opened (the live cursor).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import field

from tiptop.readonly import mutable, readonly
from tiptop.where.resolve import Site

#: A node's place in its tree: the sites from the first level down to it.
Path = tuple[Site, ...]


class View(enum.Enum):
    """Which way a tree is built (module docstring)."""

    BOTTOM_UP = "bottom-up"
    TOP_DOWN = "top-down"

    @property
    def words(self) -> str:
        """What the view shows, for a title or a head line."""
        if self is View.BOTTOM_UP:
            return "bottom-up: each function, then its callers"
        return "top-down: callers, then their callees"

    def other(self) -> View:
        """The other view (the live window's key toggles)."""
        return View.TOP_DOWN if self is View.BOTTOM_UP else View.BOTTOM_UP


@mutable
class Node:
    """One node of a tree being built: its site, the weight through it, its children by
    site."""

    site: Site
    weight: int = 0
    children: dict[Site, Node] = field(default_factory=dict)

    def add(self, frames: Iterable[Site], weight: int) -> None:
        """Count ``weight`` along ``frames``, from this node down."""
        self.weight += weight
        node = self
        for site in frames:
            child = node.children.get(site)
            if child is None:
                child = node.children[site] = Node(site)
            child.weight += weight
            node = child


def build(stacks: Iterable[tuple[tuple[Site, ...], int]], view: View) -> Node:
    """The tree of ``(frames, weight)`` stacks (outermost first) in ``view``; its root
    stands for all of them (no site of its own)."""
    root = Node(("", ""))
    for frames, weight in stacks:
        root.add(frames[::-1] if view is View.BOTTOM_UP else frames, weight)
    return root


@readonly
class TreeRow:
    """One row of a laid-out tree."""

    depth: int
    path: Path
    #: The node's weight and its part of the tree's, in percent.
    weight: int
    share: float
    #: Whether it has children, and whether they are shown.
    branches: bool
    opened: bool
    #: Words shown in place of its module (a root row's: how long, how many).
    note: str = ""

    @property
    def site(self) -> Site:
        """Its ``(symbol, module)``."""
        return self.path[-1]


def tree_rows(
    root: Node,
    *,
    depth: int = 0,
    min_share: float = 0.0,
    opened: Callable[[Path], bool] = lambda _path: True,
) -> list[TreeRow]:
    """The rows of ``root``'s tree, heaviest first at each level: at most ``depth`` levels
    (0: all), no node under ``min_share`` percent, the children of a node only where
    ``opened(path)`` says."""
    rows: list[TreeRow] = []
    whole = root.weight
    if not whole:
        return rows
    todo: list[tuple[Node, Path]] = [(c, (c.site,)) for c in _heaviest_last(root)]
    while todo:
        node, path = todo.pop()
        share = 100.0 * node.weight / whole
        if share < min_share:
            continue
        deeper = not depth or len(path) < depth
        show = bool(node.children) and deeper and opened(path)
        rows.append(TreeRow(len(path) - 1, path, node.weight, share, bool(node.children), show))
        if show:
            todo += [(c, (*path, c.site)) for c in _heaviest_last(node)]
    return rows


def _heaviest_last(node: Node) -> list[Node]:
    """``node``'s children, the heaviest last (popped first), then by name."""
    return sorted(node.children.values(), key=lambda c: (-c.weight, c.site))[::-1]


__all__ = ["Node", "Path", "TreeRow", "View", "build", "tree_rows"]
