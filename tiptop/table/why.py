"""One task's top-down tree, for ``--why PID`` (batch) and the live drill-down window:
which screen has a tree, the tree of a frame's row, and its lines of text.

The tree's numbers come from the screen's ``bottleneck(...)`` column and the columns it
names (tiptop/screens/bottleneck.py): the same values the frame holds, nothing counted
again. A node the screen has no column for (level 2 on a level-1 screen) shows ``n/a``,
and :func:`deeper` names the screen that has it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from tiptop.cells import VALUED, Status
from tiptop.frame import Frame
from tiptop.readonly import readonly
from tiptop.screens.bottleneck import BoundPath, NodeView, tree_view
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec

__all__ = [
    "DrillDown",
    "TaskTree",
    "deeper",
    "drill_down",
    "has_tree",
    "in_order",
    "node_label",
    "share_text",
    "task_tree",
    "tree_head",
    "tree_lines",
    "tree_record",
    "why_screen",
]

#: The screens ``--why`` prefers, deepest first.
WHY_SCREENS = ("topdown2", "topdown")


def _bound(screen: ScreenSpec) -> tuple[int, BoundPath] | None:
    """``screen``'s first ``bottleneck(...)`` column, bound, and its index."""
    paths = screen_columns(screen).paths
    return paths[0] if paths else None


def has_tree(screen: ScreenSpec) -> bool:
    """``screen`` has a ``bottleneck(...)`` column (a top-down tree)."""
    return _bound(screen) is not None


def why_screen(screens: Sequence[ScreenSpec]) -> int | None:
    """The index of the screen ``--why`` shows: ``topdown2``, else ``topdown``, when it
    has a tree on this CPU; None when neither has."""
    for name in WHY_SCREENS:
        for i, s in enumerate(screens):
            if s.name == name and has_tree(s):
                return i
    return None


def deeper(screen: ScreenSpec, screens: Sequence[ScreenSpec]) -> str | None:
    """The name of a loaded screen whose tree has levels that ``screen``'s lacks."""
    here = _bound(screen)
    if here is None:
        return None
    mine = {lab for lab, _ in here[1].spec.columns}
    for s in screens:
        other = _bound(s)
        if other is not None and s.name != screen.name:
            theirs = {lab for lab, _ in other[1].spec.columns}
            if max(lab.count("/") for lab in theirs) > max(lab.count("/") for lab in mine):
                return s.name
    return None


@readonly
class TaskTree:
    """One task's tree in one frame."""

    pid: int
    command: str
    nodes: list[NodeView]
    #: The bottleneck cell's status and running fraction (scaled counts: < 1).
    status: Status
    running: float
    #: Each counter's part of the interval it ran (``time_running / time_enabled``), in
    #: the frame's counter order; NaN where unknown.
    ran: tuple[tuple[str, float], ...] = ()

    @property
    def bottleneck(self) -> NodeView | None:
        """The deepest node on the critical path, None when no node is over threshold."""
        path = [n for n in self.nodes if n.critical]
        return path[-1] if path else None


def task_tree(frame: Frame, screen: ScreenSpec, pid: int) -> TaskTree | None:
    """The tree of process ``pid``'s row of ``frame`` (None when the frame has no such row
    or the screen no tree)."""
    found = _bound(screen)
    rows = np.flatnonzero((frame.pid == pid) & (frame.tid == pid))
    if found is None or not rows.size:
        return None
    j, bp = found
    i = int(rows[0])
    nodes = tree_view(bp, frame.values[i], frame.status[i])
    status = Status(int(frame.status[i, j]))
    if status not in VALUED:  # a path through unknown values would mislead
        nodes = [dataclasses.replace(n, critical=False) for n in nodes]
    ran = tuple(zip(frame.counters, frame.counter_running[i].tolist(), strict=True))
    return TaskTree(pid, frame.name[i], nodes, status, float(frame.running[i, j]), ran)


def share_text(node: NodeView) -> str:
    """A node's share of slots as the tree shows it (``n/a`` without a value)."""
    return "   n/a" if node.share is None else f"{node.share:5.1f}%"


def node_label(node: NodeView, width: int = 12) -> str:
    """A node's label indented by its level, padded to ``width``."""
    return ("  " * (node.level - 1) + node.label).ljust(width)


def in_order(nodes: Sequence[NodeView]) -> list[NodeView]:
    """The nodes depth first: each level-1 node followed by its children."""
    out: list[NodeView] = []
    for top in (n for n in nodes if n.level == 1):
        out.append(top)
        out += [n for n in nodes if n.label.startswith(top.label + "/")]
    return out


def tree_lines(tree: TaskTree, width: int = 12) -> list[str]:
    """The tree as text: :func:`tree_head`, then one line per node, depth first (``*`` on
    the critical path, value, ``>bound``, ``over``, what it means; what usually helps)."""
    out = tree_head(tree)
    for n in in_order(tree.nodes):
        mark = "*" if n.critical else " "
        over = "over" if n.over else "    "
        head = f" {mark} {node_label(n, width)} {share_text(n)} >{n.bound:3.0f}% {over}"
        out.append(f"{head}  {n.meaning}; {n.helps}")
    return out


def tree_head(tree: TaskTree) -> list[str]:
    """The tree's summary line (its bottleneck, or why there is none; whether its counts
    were scaled), then, when its events were multiplexed, the part of the time each ran."""
    head = f"PID {tree.pid} ({tree.command}): "
    if tree.status not in VALUED:
        head += "counts missing ('?'): no tree this refresh"
    elif tree.bottleneck is None:
        head += "no top-down node over its threshold"
    else:
        b = tree.bottleneck
        head += f"bottleneck {b.label} {b.share or 0.0:.0f}% of slots"
    if tree.running < 1.0:
        head += f" (counts scaled: they ran {100 * tree.running:.0f}% of the time)"
    out = [head]
    if any(r < 1.0 for _a, r in tree.ran):  # multiplexed: the time each event ran
        out.append("   events ran: " + ", ".join(f"{a} {100 * r:.0f}%" for a, r in tree.ran))
    return out


def tree_record(tree: TaskTree) -> dict[str, object]:
    """The tree as a JSON-ready dict (``--why PID --format json``)."""
    b = tree.bottleneck
    return {
        "pid": tree.pid,
        "command": tree.command,
        "status": tree.status.name.lower(),
        "running": tree.running,
        "ran": {a: (None if r != r else r) for a, r in tree.ran},  # NaN (unknown) as null
        "bottleneck": None if b is None else b.label,
        "share": None if b is None else b.share,
        "nodes": [
            {
                "label": n.label,
                "metric": n.metric,
                "level": n.level,
                "share": n.share,
                "threshold": n.bound,
                "over": n.over,
                "critical": n.critical,
                "meaning": n.meaning,
                "helps": n.helps,
            }
            for n in tree.nodes
        ],
    }


@readonly
class DrillDown:
    """What the live drill-down window shows: the tree, or the one line why not, and a
    note on a deeper level another screen has."""

    tree: TaskTree | None
    reason: str | None = None
    note: str | None = None


def drill_down(
    frame: Frame,
    screen: ScreenSpec,
    screens: Sequence[ScreenSpec],
    pid: int | None,
    about: Callable[[Sequence[str]], str | None] = lambda _a: None,
) -> DrillDown:
    """The tree of process ``pid`` on ``screen``, or why there is none in one line: the
    screen has no tree (and which screen has one, if any), no task is selected, or the
    counts are missing (``about(aliases)``: the message log's line about them, e.g. no
    PMU)."""
    if not has_tree(screen):
        other = why_screen(screens)
        if other is None:
            return DrillDown(None, "no top-down tree for this CPU: no screen has one")
        name = screens[other].name
        return DrillDown(None, f"screen '{screen.name}' has no top-down tree: '{name}' has (+/-)")
    if pid is None:
        return DrillDown(None, "no task selected (no row shown)")
    tree = task_tree(frame, screen, pid)
    if tree is None:
        return DrillDown(None, f"PID {pid}: no row this refresh")
    more = deeper(screen, screens)
    note = f"level 2 is on screen '{more}' (+/- to switch)" if more else None
    if tree.status not in VALUED:
        i = int(np.flatnonzero(frame.tid == pid)[0])
        lost = [a for a, s in zip(frame.counters, frame.counter_status[i], strict=True) if s]
        why = about(lost) or "its counters could not be read"
        return DrillDown(None, f"PID {pid} ({tree.command}): counts missing: {why}")
    return DrillDown(tree, None, note)
