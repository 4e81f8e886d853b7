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
from tiptop.frame import Context, Frame
from tiptop.readonly import readonly
from tiptop.screens.bottleneck import BoundOf, BoundPath, NodeView, tree_view
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec
from tiptop.screens.timetree import TIME_LABELS, UNKNOWN, time_level

__all__ = [
    "DrillDown",
    "TaskTree",
    "bound_text",
    "context_text",
    "deeper",
    "drill_down",
    "has_tree",
    "in_order",
    "node_label",
    "share_text",
    "summary",
    "task_tree",
    "time_screen",
    "tree_head",
    "tree_lines",
    "tree_record",
    "why_screen",
]

#: The screens ``--why`` prefers, deepest first.
WHY_SCREENS = ("topdown2", "topdown")

#: The screen ``--why`` and the live drill-down fall back to where no top-down tree counts:
#: where the task's time went, from the kernel's own accounting (no PMU needed).
TIME_SCREEN = "state"


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


def time_screen(screens: Sequence[ScreenSpec]) -> int | None:
    """The index of the time screen (``state``) when it is loaded with its tree of where
    the time went; None otherwise."""
    for i, s in enumerate(screens):
        if s.name == TIME_SCREEN and has_tree(s):
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
            depth = max((lab.count("/") for lab in mine), default=-1)
            if max((lab.count("/") for lab in theirs), default=-1) > depth:
                return s.name
    return None


@readonly
class TaskTree:
    """One task's tree in one frame: where its time went, and beneath "running" the
    top-down tree where the screen has one."""

    pid: int
    command: str
    nodes: list[NodeView]
    #: The bottleneck cell's status and running fraction (scaled counts: < 1).
    status: Status
    running: float
    #: Each counter's part of the interval it ran (``time_running / time_enabled``), in
    #: the frame's counter order; NaN where unknown.
    ran: tuple[tuple[str, float], ...] = ()
    #: Where the time went is known (the time level's nodes are in :attr:`nodes`).
    timed: bool = False
    #: The threads the row's time covers (a process: its threads' sum).
    threads: float = 1.0
    #: Its cgroup's CPU limit in CPUs, and the CPUs it may run on; None where unknown.
    limit: float | None = None
    cpus: float | None = None
    #: What the whole machine did over the refresh.
    context: Context | None = None
    #: The screen has a top-down tree (its nodes beneath Run).
    topdown: bool = True
    #: The status of the top-down tree's node columns (``?`` without a PMU), apart from
    #: the bottleneck cell's, which the time level decides where it can.
    topdown_status: Status = Status.OK

    @property
    def bottleneck(self) -> NodeView | None:
        """The deepest node on the critical path, None when no node is over threshold (or
        the task slept)."""
        path = [n for n in self.nodes if n.critical]
        return path[-1] if path else None

    def node(self, label: str) -> NodeView | None:
        """The node of ``label``, None when the tree has none."""
        return next((n for n in self.nodes if n.label == label), None)


def task_tree(frame: Frame, screen: ScreenSpec, pid: int) -> TaskTree | None:
    """The tree of process ``pid``'s row of ``frame`` (None when the frame has no such row
    or the screen no tree)."""
    found = _bound(screen)
    rows = np.flatnonzero((frame.pid == pid) & (frame.tid == pid))
    if found is None or not rows.size:
        return None
    j, bp = found
    i = int(rows[0])
    sl = slice(i, i + 1)
    level = time_level(frame.time_percent[sl], frame.time_status[sl], frame.time_threads[sl])
    timed = int(level.node[0]) != UNKNOWN
    nodes = tree_view(bp, frame.values[i], frame.status[i], level if timed else None)
    status = Status(int(frame.status[i, j]))
    topdown_status = Status(int(bp.node_status(frame.status[sl])[0]))
    if status not in VALUED:  # a path through unknown values would mislead
        nodes = [dataclasses.replace(n, critical=False) for n in nodes]
    elif topdown_status not in VALUED:  # no top-down node is on it either
        nodes = [
            n if n.label in TIME_LABELS else dataclasses.replace(n, critical=False) for n in nodes
        ]
    ran = tuple(zip(frame.counters, frame.counter_running[i].tolist(), strict=True))
    return TaskTree(
        pid,
        frame.name[i],
        nodes,
        status,
        float(frame.running[i, j]),
        ran,
        timed=timed,
        threads=float(frame.time_threads[i]),
        limit=_known(frame.cpu_limit[i]),
        cpus=_known(frame.cpus_allowed[i]),
        context=frame.context,
        topdown=bp.spec.tree is not None,
        topdown_status=topdown_status,
    )


def _known(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def share_text(node: NodeView) -> str:
    """A node's share as the tree shows it (``n/a`` without a value): % of slots, or of the
    interval for the time level's nodes."""
    return "   n/a" if node.share is None else f"{node.share:5.1f}%"


def node_label(node: NodeView, width: int = 12) -> str:
    """A node's label indented by its level, padded to ``width``."""
    return ("  " * (node.level - 1) + node.label).ljust(width)


def in_order(nodes: Sequence[NodeView]) -> list[NodeView]:
    """The nodes in the order they are shown: :func:`tiptop.screens.bottleneck.tree_view`
    gives them so (each node followed by its children)."""
    return list(nodes)


def bound_text(node: NodeView) -> str:
    """A node's bound as the tree shows it: ``> 20%`` of slots, or of what the time
    level's bound is a part of; blank for Run (the critical node when no other is)."""
    if node.of is BoundOf.NOTHING:
        return " " * 6
    if node.of is BoundOf.SLOTS:
        return f">{node.bound:3.0f}%"
    return f">{node.bound:3.0f}% of {node.of}"


def tree_lines(tree: TaskTree, width: int = 12) -> list[str]:
    """The tree as text: :func:`tree_head`, then one line per node, in order (``*`` on the
    critical path, value, ``>bound``, ``over``, what it means; what usually helps)."""
    out = tree_head(tree)
    bounds = max((len(bound_text(n)) for n in tree.nodes), default=0)
    for n in in_order(tree.nodes):
        mark = "*" if n.critical else " "
        over = "over" if n.over else "    "
        bound = bound_text(n).ljust(bounds)
        head = f" {mark} {node_label(n, width)} {share_text(n)} {bound} {over}"
        out.append(f"{head}  {n.meaning}; {n.helps}")
    return out


def tree_head(tree: TaskTree) -> list[str]:
    """The tree's summary line (its bottleneck in words, or why there is none; whether its
    counts were scaled), then, when its events were multiplexed, the part of the time each
    ran, and the machine's context when its time is known."""
    head = f"PID {tree.pid} ({tree.command}): " + summary(tree)
    if tree.running < 1.0 and _below_run(tree):
        head += f" (counts scaled: they ran {100 * tree.running:.0f}% of the time)"
    out = [head]
    if _below_run(tree) and any(r < 1.0 for _a, r in tree.ran):  # multiplexed
        out.append("   events ran: " + ", ".join(f"{a} {100 * r:.0f}%" for a, r in tree.ran))
    if tree.timed and tree.context is not None:
        out.append("   machine: " + context_text(tree.context))
    return out


def _below_run(tree: TaskTree) -> bool:
    """The top-down tree is what the summary speaks of: no time level, or it ran."""
    b = tree.bottleneck
    return not tree.timed or (b is not None and b.label not in TIME_LABELS[1:])


def summary(tree: TaskTree) -> str:
    """Where the task's time went, in words (docs/screens.md, "Where the time goes"), e.g.
    ``waiting for a CPU 48% of its time: 2 CPUs, 9 runnable`` or ``running 96%: back-end
    bound 45% of slots, memory 36%``; without a time level, the top-down bottleneck."""
    if not tree.timed:
        return _topdown_words(tree)
    b = tree.bottleneck
    if b is None:
        sleep = tree.node("Sleep")
        io = tree.node("IO")
        rest = "asleep" if io is not None and io.share is not None else "asleep or blocked on I/O"
        share = sleep.share if sleep is not None and sleep.share is not None else 0.0
        return f"{rest} {_of(share, tree)}: no bottleneck"
    if b.label == "Throttled":
        limit = f" ({tree.limit:.2g} CPU)" if tree.limit is not None else ""
        return f"throttled by its cgroup's CPU limit{limit}: {_of(b.share, tree)}"
    if b.label == "Wait":
        return f"waiting for a CPU {_of(b.share, tree)}{_crowd(tree)}"
    if b.label == "IO":
        return f"blocked on I/O {_of(b.share, tree)}"
    run = tree.node("Run")
    running = f"running {_of(run.share if run is not None else None, tree)}"
    if b.label == "Run":
        if not tree.topdown:
            return running
        return f"{running}; top-down: " + (
            "counts missing ('?')"
            if tree.topdown_status not in VALUED
            else "no top-down node over its threshold"
        )
    return f"{running}; {_topdown_words(tree)}"


def _topdown_words(tree: TaskTree) -> str:
    """The top-down tree's bottleneck, or why there is none."""
    if tree.status not in VALUED:
        return "counts missing ('?'): no tree this refresh"
    b = tree.bottleneck
    if b is None:
        return "no top-down node over its threshold"
    return f"bottleneck {b.label} {b.share or 0.0:.0f}% of slots"


def _of(share: float | None, tree: TaskTree) -> str:
    """A time share in words: ``48% of its time``, or for a process of several threads
    ``150% (its 4 threads' time summed)``."""
    if share is None:
        return "?"
    if tree.threads <= 1:
        return f"{share:.0f}% of its time"
    return f"{share:.0f}% (its {tree.threads:.0f} threads' time summed)"


def _crowd(tree: TaskTree) -> str:
    """Why a task waits for a CPU: the CPUs it may use and the tasks runnable."""
    parts = []
    c = tree.context
    if tree.cpus is not None and c is not None and tree.cpus < c.cpus:
        parts.append(f"it may run on {tree.cpus:.0f} of {c.cpus} CPUs")
    elif c is not None:
        parts.append(f"{c.cpus} CPU{'s' if c.cpus != 1 else ''}")
    if c is not None and c.runnable is not None:
        parts.append(f"{c.runnable} runnable")
    return ": " + ", ".join(parts) if parts else ""


def context_text(c: Context) -> str:
    """What the machine did over the refresh, in one line: CPUs, runnable tasks, steal
    and the pressure of each resource (PSI some/full, % of the interval)."""
    out = [f"{c.cpus} CPUs"]
    if c.runnable is not None:
        out.append(f"{c.runnable} runnable")
    if c.steal is not None:
        out.append(f"steal {100 * c.steal:.1f}%")
    for p in c.pressure:
        some = "?" if p.some is None else f"{100 * p.some:.1f}"
        full = "?" if p.full is None else f"{100 * p.full:.1f}"
        out.append(f"{p.resource} pressure {some}/{full}%")
    return ", ".join(out)


def tree_record(tree: TaskTree) -> dict[str, object]:
    """The tree as a JSON-ready dict (``--why PID --format json``)."""
    b = tree.bottleneck
    c = tree.context
    return {
        "pid": tree.pid,
        "command": tree.command,
        "status": tree.status.name.lower(),
        "running": tree.running,
        "ran": {a: (None if r != r else r) for a, r in tree.ran},  # NaN (unknown) as null
        "bottleneck": None if b is None else b.label,
        "share": None if b is None else b.share,
        "words": summary(tree),
        "threads": tree.threads,
        "limit": tree.limit,
        "cpus": tree.cpus,
        "context": None
        if c is None
        else {
            "cpus": c.cpus,
            "runnable": c.runnable,
            "steal": c.steal,
            "pressure": {p.resource: {"some": p.some, "full": p.full} for p in c.pressure},
        },
        "nodes": [
            {
                "label": n.label,
                "metric": n.metric,
                "level": n.level,
                "share": n.share,
                "threshold": n.bound,
                "of": n.of,
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
    """What the live drill-down window shows: the tree, or the one line why not, a note on
    a deeper level another screen has, and why the tree's top-down counts are missing
    where the time shares stand without them (``missing``: no PMU)."""

    tree: TaskTree | None
    reason: str | None = None
    note: str | None = None
    missing: str | None = None


def drill_down(
    frame: Frame,
    screen: ScreenSpec,
    screens: Sequence[ScreenSpec],
    pid: int | None,
    about: Callable[[Sequence[str]], str | None] = lambda _a: None,
) -> DrillDown:
    """The tree of process ``pid`` on ``screen``, or why there is none in one line: the
    screen has no tree (and which screen has one: a top-down one, else the time screen
    where no CPU tree is, as ``--why`` falls back to), no task is selected, or the
    counts are missing (``about(aliases)``: the message log's line about them, e.g. no
    PMU)."""
    if not has_tree(screen):
        other = why_screen(screens)
        if other is not None:
            name = screens[other].name
            return DrillDown(
                None, f"screen '{screen.name}' has no top-down tree: '{name}' has (+/-)"
            )
        # No PMU tree here: where the time went needs none, as --why's fallback.
        timed = time_screen(screens)
        if timed is None:
            return DrillDown(None, "no top-down tree for this CPU: no screen has one")
        name = screens[timed].name
        return DrillDown(
            None, f"no top-down tree for this CPU: '{name}' has where the time went (+/-)"
        )
    if pid is None:
        return DrillDown(None, "no task selected (no row shown)")
    tree = task_tree(frame, screen, pid)
    if tree is None:
        return DrillDown(None, f"PID {pid}: no row this refresh")
    more = deeper(screen, screens)
    note = f"level 2 is on screen '{more}' (+/- to switch)" if more else None
    missing = None
    if tree.topdown_status not in VALUED:
        i = int(np.flatnonzero(frame.tid == pid)[0])
        lost = [a for a, s in zip(frame.counters, frame.counter_status[i], strict=True) if s]
        why = about(lost) or "its counters could not be read"
        if not tree.timed:
            return DrillDown(None, f"PID {pid} ({tree.command}): counts missing: {why}")
        missing = f"top-down counts missing: {why}"  # where its time went is known still
    return DrillDown(tree, None, note, missing)
