"""The bottleneck column and the top-down tree of one task (docs/screens.md "Bottleneck").

A column whose expression is ``bottleneck(TREE: LABEL=HEADER, ...)`` shows each task's
critical path through ``TREE`` (tiptop/screens/topdown.py): the deepest node that is over
its threshold at every level, with its share, e.g. ``BE/Mem 41%``, or ``-`` when no level-1
node is over its threshold. Each ``LABEL=HEADER`` says which column of the screen (by its
header, spaces stripped) holds that node's value in % of slots; a parent with no column
is the sum of its children when they all have one (a level-2 screen).

*The node is data, the value is its share.* Such a cell's node is its own array, an
int16 per cell beside the value (``ColumnCells.node``, ``Frame.node``): the index of the node
in the column's label table (:attr:`PathSpec.labels`, the tree's nodes in order), or -1
when no level-1 node is over its threshold; its value is the node's % of slots (0 for
none). Sorting by the column groups tasks by node, then share (``tiptop.table.select``);
csv and json print the node and share apart (``tiptop.table``). Its status is the node columns':
not OK (``-``/``?``) when any of them is not, ``SUSPECT`` when a breakdown is; its running
fraction is their smallest, so a multiplexed count is marked as in any column. It is
computed by the one evaluator (tiptop/screens/evaluate.py), after the other columns.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from enum import StrEnum

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code, valued
from tiptop.errors import SpecError
from tiptop.outside import shown
from tiptop.readonly import readonly
from tiptop.screens.timetree import (
    IO_BOUND,
    RUN_NODE,
    SLEEP_BOUND,
    SLEEP_NODE,
    THROTTLED_BOUND,
    TIME_ADVICE,
    TIME_LABELS,
    TIME_PARENTS,
    UNKNOWN,
    WAIT_BOUND,
    TimeLevel,
)
from tiptop.screens.topdown import ADVICE, TREES, Tree, exceeds

__all__ = [
    "NodeView",
    "PathSpec",
    "format_path",
    "is_path",
    "parse_path",
    "tree_view",
    "well_formed",
]

#: A cell's node where no node is over its threshold, and in every other column.
NO_NODE = -1
#: The dtype of a cell's node (a tree has a few dozen nodes at most).
NODE_DTYPE = np.int16
_CALL = re.compile(r"\s*bottleneck\s*\((?P<body>.*)\)\s*\Z", re.S)
_PAIR = re.compile(r"\s*(?P<label>[A-Za-z]+(?:/[A-Za-z]+)?)\s*=\s*(?P<header>[^,=()\s]+)\s*\Z")


#: The tree name of a ``bottleneck(time)`` column: the time level alone, no top-down tree.
TIME_ONLY = "time"
#: A top-down node's index in a column's label table: after the time level's nodes.
OFFSET = len(TIME_LABELS)


@readonly
class PathSpec:
    """A parsed ``bottleneck(...)`` expression: the top-down tree (None for the time level
    alone) and each node's column header."""

    tree: Tree | None
    columns: tuple[tuple[str, str], ...]

    @property
    def labels(self) -> tuple[str, ...]:
        """The label table a cell's node indexes: the time level's nodes
        (tiptop/screens/timetree.py), then the tree's, in tree order."""
        return TIME_LABELS + (self.tree.labels if self.tree is not None else ())


def is_path(text: str) -> bool:
    """``text`` is a ``bottleneck(...)`` expression (well formed or not)."""
    return text.lstrip().startswith("bottleneck") and _CALL.match(text) is not None


def parse_path(text: str) -> PathSpec:
    """Parse a ``bottleneck(TREE: LABEL=HEADER, ...)`` expression; SpecError says why not."""
    m = _CALL.match(text)
    if m is None:
        raise SpecError(f"not a bottleneck expression: '{shown(text)}'")
    name, colon, rest = m["body"].partition(":")
    name = name.strip()
    if name == TIME_ONLY:
        if colon:
            raise SpecError("bottleneck(time) names no columns: the time level reads TIME_*")
        return PathSpec(None, ())
    if name not in TREES:
        known = ", ".join([TIME_ONLY, *sorted(TREES)])
        raise SpecError(f"bottleneck: unknown tree '{shown(name)}' (known: {known})")
    tree = TREES[name]
    pairs: list[tuple[str, str]] = []
    for part in rest.split(",") if colon and rest.strip() else ():
        p = _PAIR.match(part)
        if p is None:
            raise SpecError(f"bottleneck: expected LABEL=HEADER, got '{shown(part.strip())}'")
        if p["label"] not in tree.labels:
            raise SpecError(f"bottleneck: tree '{name}' has no node '{p['label']}'")
        pairs.append((p["label"], p["header"]))
    if not pairs:
        raise SpecError("bottleneck: no LABEL=HEADER pairs (which columns hold the nodes?)")
    return PathSpec(tree, tuple(pairs))


class BoundPath:
    """A :class:`PathSpec` bound to a screen's column headers: computes the column."""

    def __init__(self, spec: PathSpec, headers: Sequence[str]) -> None:
        self.spec = spec
        where = {h.strip(): j for j, h in enumerate(headers)}
        nodes = spec.tree.nodes if spec.tree is not None else ()
        index = {n.label: i for i, n in enumerate(nodes)}
        given = dict(spec.columns)
        #: Per tree node: its column, or -1 (derived from its children, or absent).
        self.col = np.array([where.get(given.get(n.label, ""), -1) for n in nodes], np.intp)
        self.parent = np.array([index.get(n.parent or "", -1) for n in nodes], np.intp)
        self.level = np.array([n.level for n in nodes], np.intp)
        #: Per node, its threshold terms as ``(node indices, bounds)``.
        self.terms = [
            [
                (np.array([index[lab] for lab, _ in t], np.intp), np.array([b for _, b in t]))
                for t in n.threshold
                if all(lab in index for lab, _ in t)
            ]
            for n in nodes
        ]
        # Not np.unique: it imports numpy.ma, which a start has no other use for
        # (benchmarks/README.md, "Start-up").
        self.used = np.array(sorted({c for c in self.col.tolist() if c >= 0}), np.intp)

    def shares(self, values: np.ndarray, status: np.ndarray) -> np.ndarray:
        """``(n, nodes)`` fractions of slots; NaN where the node has no valued column
        and is not the sum of its children's."""
        n, m = len(values), len(self.col)
        out = np.full((n, m), np.nan)
        for i, c in enumerate(self.col.tolist()):
            if c >= 0:
                out[:, i] = np.where(valued(status[:, c]), values[:, c] / 100.0, np.nan)
        for i in np.flatnonzero(self.col < 0).tolist():
            kids = np.flatnonzero(self.parent == i)
            if kids.size and (self.col[kids] >= 0).all():
                out[:, i] = out[:, kids].sum(axis=1)  # NaN when any child is
        return out

    def over(self, shares: np.ndarray) -> np.ndarray:
        """``(n, nodes)``: each node over its threshold (a NaN share never is; a share at
        its bound up to rounding is not: :func:`~tiptop.screens.topdown.exceeds`)."""
        out = np.zeros(shares.shape, bool)
        with np.errstate(invalid="ignore"):
            for i, terms in enumerate(self.terms):
                for idx, bounds in terms:
                    out[:, i] |= exceeds(shares[:, idx], bounds).all(axis=1)
        return out

    def walk(self, shares: np.ndarray, over: np.ndarray) -> np.ndarray:
        """Per row, the deepest node on the critical path, or -1: at each level the child
        over its threshold with the largest share, the first in tree order of those tied
        with it up to rounding (:func:`~tiptop.screens.topdown.exceeds`). Below level 1
        only where every child of the node has a share: a level-1 screen that counts one
        level-2 node for a threshold (heavy operations, for retiring's) stops at level 1."""
        n = len(shares)
        cur = np.full(n, -1, np.intp)
        known = ~np.isnan(shares)
        for lvl in (1, 2):
            kids = (self.parent[None, :] == cur[:, None]) & (self.level == lvl)
            cand = over & kids
            if lvl > 1:
                cand &= (known | ~kids).all(axis=1, keepdims=True)
            top = np.where(cand, shares, -np.inf).max(axis=1, keepdims=True)
            best = (cand & ~exceeds(top, shares)).argmax(axis=1)
            cur = np.where(cand.any(axis=1), best, cur)
        return cur

    def evaluate(
        self,
        values: np.ndarray,
        status: np.ndarray,
        running: np.ndarray,
        time: TimeLevel | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The column's ``(values, status, running, node)`` over the other columns' cells
        and the rows' ``time`` level (None: unknown for every row): per row the critical
        node's share in % (0 for none), and the node, an index in :attr:`PathSpec.labels`
        (:data:`NO_NODE` for none). Where the time level says Wait, Throttled or IO, that
        node; where Run (or where it is unknown), the top-down tree's node, or Run itself
        when the tree has none over its threshold or cannot say (time known); where Sleep,
        no node."""
        v, s, r, node = self._topdown(values, status, running)
        if time is None:
            return v, s, r, node
        tn = time.node
        share = time.shares[np.arange(len(tn)), np.maximum(tn, 0)]
        own = (tn != RUN_NODE) & (tn != UNKNOWN)  # Wait, Throttled, IO, Sleep
        ran = (tn == RUN_NODE) & ((node == NO_NODE) | ~valued(s))  # Run, no deeper node
        here = own | ran
        v = np.where(here, np.where(tn == SLEEP_NODE, 0.0, share), v)
        node = np.where(here, np.where(tn == SLEEP_NODE, NO_NODE, tn), node)
        s = np.where(here, Code.OK, s).astype(STATUS_DTYPE)
        r = np.where(here, 1.0, r)
        return v, s, r, node.astype(NODE_DTYPE)

    def node_status(self, status: np.ndarray) -> np.ndarray:
        """Per row, the status of the top-down tree's node columns: the worst that is not
        valued, else ``SUSPECT`` when a breakdown is, else OK (OK without a tree)."""
        s = np.full(len(status), Code.OK, STATUS_DTYPE)
        if self.used.size:
            st = status[:, self.used]
            bad = np.where(valued(st), 0, st).max(axis=1)
            s = np.where(bad > 0, bad, np.where((st == Code.SUSPECT).any(axis=1), Code.SUSPECT, 0))
            s = s.astype(STATUS_DTYPE)
        return s

    def _topdown(
        self, values: np.ndarray, status: np.ndarray, running: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The top-down tree's part: per row its critical node's share in % of slots and
        the node (offset past the time level; :data:`NO_NODE` for none), the status of
        the node columns (not OK when any is not, ``SUSPECT`` when a breakdown is) and
        their smallest running fraction."""
        n = len(values)
        if self.spec.tree is None:
            return np.zeros(n), np.zeros(n, STATUS_DTYPE), np.ones(n), np.full(n, NO_NODE)
        shares = self.shares(values, status)
        node = self.walk(shares, self.over(shares))
        picked = shares[np.arange(n), np.maximum(node, 0)] * 100.0
        v = np.where(node >= 0, picked, 0.0)
        s = self.node_status(status)
        r = np.ones(n)
        if self.used.size:
            r = np.fmin(running[:, self.used], 1.0).min(axis=1)
            r = np.where(np.isnan(r), 1.0, r)
        ok = valued(s)
        v = np.where(ok, v, np.nan)
        return v, s, r, np.where(ok & (node >= 0), node + OFFSET, NO_NODE)


def well_formed(text: str) -> PathSpec | None:
    """``text`` parsed when it is a well-formed bottleneck expression, else None (the
    screen's loader said why it is not)."""
    if not is_path(text):
        return None
    try:
        return parse_path(text)
    except SpecError:
        return None


def format_path(
    labels: Sequence[str], share: Callable[[float], str]
) -> Callable[[float, int], str]:
    """A cell formatter of a value and its node: the node's label and its share formatted
    by ``share`` (the column's printf format), or ``-`` alone for no node."""

    def fmt(value: float, node: int) -> str:
        if not 0 <= node < len(labels):
            return "-"
        return f"{labels[node]} {share(value).strip()}"

    return fmt


class BoundOf(StrEnum):
    """What a node's bound is a part of (its word is the tree's: ``>20% of wait``)."""

    #: Top-down: a share of the pipeline's slots.
    SLOTS = "slots"
    #: The time level (tiptop/screens/timetree.py): of the time on or waiting for a CPU,
    BUSY = "busy time"
    #: of the time waiting,
    WAIT = "wait"
    #: of the whole interval;
    INTERVAL = "interval"
    #: none (Run: the critical node when no other is).
    NOTHING = ""


@readonly
class NodeView:
    """One node of a task's tree, for ``--why`` and the live drill-down."""

    label: str
    metric: str
    level: int
    #: % of slots (a time node: % of the interval), or None where there is no value for it.
    share: float | None
    #: The node's own bound, in %.
    bound: float
    over: bool
    critical: bool
    meaning: str
    helps: str
    #: What the bound is a part of.
    of: BoundOf = BoundOf.SLOTS


#: Per time node: the variable that holds its share, its bound in % and what of.
_TIME_BOUNDS = (
    ("TIME_RUN", 0.0, BoundOf.NOTHING),
    ("TIME_WAIT", 100.0 * WAIT_BOUND, BoundOf.BUSY),
    ("TIME_THROTTLED", 100.0 * THROTTLED_BOUND, BoundOf.WAIT),
    ("TIME_IO", 100.0 * IO_BOUND, BoundOf.BUSY),
    ("TIME_SLEEP", 100.0 * SLEEP_BOUND, BoundOf.INTERVAL),
)


def tree_view(
    bp: BoundPath, values: np.ndarray, status: np.ndarray, time: TimeLevel | None = None
) -> list[NodeView]:
    """The tree of one row (``values``/``status`` of its columns; ``time``: its time level,
    one row, or None where unknown), in the order it is shown: the time level's nodes, with
    the top-down nodes one level beneath Run, each level-1 node followed by its children;
    without a time level, the top-down nodes alone."""
    topdown = _topdown_view(bp, values, status)
    if time is None or int(time.node[0]) == UNKNOWN:
        return topdown
    tn = int(time.node[0])
    path = {tn, TIME_PARENTS[tn]} - {-1, SLEEP_NODE}
    if tn != RUN_NODE:
        topdown = [dataclasses.replace(n, critical=False) for n in topdown]
    out = []
    for i, label in enumerate(TIME_LABELS):
        metric, bound, of = _TIME_BOUNDS[i]
        s = float(time.shares[0, i])
        meaning, helps = TIME_ADVICE[label]
        level = 2 if TIME_PARENTS[i] >= 0 else 1
        over = bool(time.over[0, i])
        share = None if np.isnan(s) else s
        out.append(
            NodeView(label, metric, level, share, bound, over, i in path, meaning, helps, of)
        )
        if i == RUN_NODE:
            out += [dataclasses.replace(n, level=n.level + 1) for n in topdown]
    return out


def _topdown_view(bp: BoundPath, values: np.ndarray, status: np.ndarray) -> list[NodeView]:
    """The top-down nodes of one row, each level-1 node followed by its children."""
    if bp.spec.tree is None:
        return []
    shares = bp.shares(values[None, :], status[None, :])
    over = bp.over(shares)
    deepest = int(bp.walk(shares, over)[0])
    path = set()
    while deepest >= 0:
        path.add(deepest)
        deepest = int(bp.parent[deepest])
    nodes = bp.spec.tree.nodes
    views = {}
    for i, node in enumerate(nodes):
        s = float(shares[0, i])
        meaning, helps = ADVICE.get(node.label.rpartition("/")[2], ("", ""))
        share = None if np.isnan(s) else 100.0 * s
        over_i, bound = bool(over[0, i]), 100.0 * node.bound
        views[node.label] = NodeView(
            node.label, node.metric, node.level, share, bound, over_i, i in path, meaning, helps
        )
    out = []
    for top in (n for n in nodes if n.level == 1):
        out.append(views[top.label])
        out += [views[n.label] for n in nodes if n.parent == top.label]
    return out
