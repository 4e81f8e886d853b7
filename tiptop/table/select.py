"""Which rows a view shows, and in what order: the view's settings, the idle filter, the
sort, and a frame conformed to its screen's columns. No formatting, no I/O."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tiptop.cells import Code, valued
from tiptop.frame import Frame
from tiptop.readonly import readonly
from tiptop.screens.model import ColumnSpec
from tiptop.screens.variables import VARIABLES

#: The original's default ``--cpu-min`` (percent).
DEFAULT_CPU_THRESHOLD = 0.00001


@readonly
class View:
    """How rows are chosen, ordered and shown (the live keys change these fields)."""

    #: -1 = PID, 0..k-1 = the screen's columns, k = COMMAND (k = number of columns).
    sort_column: int = 0
    descending: bool = True
    show_idle: bool = False
    cpu_threshold: float = DEFAULT_CPU_THRESHOLD
    show_user: bool = False
    show_cmdline: bool = False
    #: ``-w``: an ``int`` matches the row's tid; a ``str`` is a substring of name/cmdline.
    watch: int | str | None = None
    sticky: bool = False
    pid_width: int = 5
    #: The name column's header: ``COMMAND``, or ``CGROUP`` when rows are cgroups.
    name_header: str = "COMMAND"
    #: Only the rows whose command :func:`matches` it (the live ``\\`` filter); "" for all.
    name_filter: str = ""


def builtin_variables() -> list[tuple[str, str]]:
    """``(name, description)`` of each built-in variable of column expressions, in
    registry order (``tiptop.screens.variables``; the live help window lists them)."""
    return [(v.name, v.description) for v in VARIABLES]


def pid_width_for(pid_max: int) -> int:
    """The id column width: 5, plus the digits of ``pid_max - 1`` beyond 5 (2.3.2 rule)."""
    return 5 + max(0, len(str(max(pid_max - 1, 1))) - 5)


def command_of(frame: Frame, i: int, show_cmdline: bool) -> str:
    if show_cmdline and frame.cmdline[i]:
        return frame.cmdline[i]
    return frame.name[i]


def matches(command: str, text: str) -> bool:
    """htop's rule for its search and filter (``/``, ``\\``): ``text`` anywhere in the
    command, case ignored."""
    return text.casefold() in command.casefold()


def is_watched(frame: Frame, i: int, view: View) -> bool:
    w = view.watch
    if w is None:
        return False
    if isinstance(w, int):
        return int(frame.tid[i]) == w
    return w in command_of(frame, i, view.show_cmdline)


def visible(frame: Frame, view: View) -> np.ndarray:
    """Boolean mask of the rows shown: idle rows (``cpu_total < cpu_threshold``) are hidden
    unless ``show_idle``; dead rows are shown (the sampler keeps them after their last
    interval only in sticky mode); watched rows are shown although idle; with a
    ``name_filter``, only the rows whose command matches it."""
    n = len(frame)
    if view.show_idle or n == 0:
        mask = np.ones(n, bool)
    else:
        cpu = np.nan_to_num(frame.cpu_total, nan=0.0)
        mask = cpu >= view.cpu_threshold
        if view.watch is not None:
            mask |= np.fromiter((is_watched(frame, i, view) for i in range(n)), bool, n)
    if view.name_filter:
        text, cmdline = view.name_filter, view.show_cmdline
        mask &= np.fromiter(
            (matches(command_of(frame, i, cmdline), text) for i in range(n)), bool, n
        )
    return mask


def order(frame: Frame, idx: np.ndarray, view: View, ncols: int) -> np.ndarray:
    """The indices ``idx`` sorted on the view's column: stable; cells without a value last in
    either direction; PID numerically; COMMAND by string."""
    if len(idx) == 0:
        return idx
    col = view.sort_column
    # A bottleneck cell's node (``Frame.node``; -1: none, and in every other column):
    # such a column sorts by node (none first), then share.
    node = np.zeros(len(idx), np.int64)
    if col < 0:
        key = frame.tid[idx].astype(np.float64)
        bad = np.zeros(len(idx), bool)
    elif col >= ncols:
        cmds = [command_of(frame, int(i), view.show_cmdline) for i in idx]
        perm = sorted(range(len(idx)), key=cmds.__getitem__, reverse=view.descending)
        return idx[np.asarray(perm, np.int64)]
    else:
        key = frame.values[idx, col].astype(np.float64)
        bad = ~valued(frame.status[idx, col]) | np.isnan(key)
        key = np.where(bad, 0.0, key)
        node = np.where(bad, 0, frame.node[idx, col] + 1)
    if view.descending:
        key, node = -key, -node
    # np.lexsort is stable; the last key is primary: OK cells first, then by node, value.
    return idx[np.lexsort((key, node, bad))]


def shown_rows(frame: Frame, ncols: int, view: View) -> tuple[Frame, np.ndarray]:
    """``frame`` conformed to ``ncols`` cells and the indices of its visible rows, sorted."""
    frame = conform(frame, ncols)
    idx = np.flatnonzero(visible(frame, view))
    return frame, order(frame, idx, view, ncols)


def conform(frame: Frame, ncols: int) -> Frame:
    """``frame`` with exactly ``ncols`` cell columns: a frame taken for another screen (a
    screen switch racing a refresh) would otherwise print fewer cells than the header has
    columns, shifting every later column; missing cells read ``?`` (UNREADABLE), extra
    ones are dropped."""
    have = frame.values.shape[1]
    if have == ncols:
        return frame
    n = len(frame)
    keep = min(have, ncols)
    values = np.full((n, ncols), np.nan)
    status = np.full((n, ncols), Code.UNREADABLE, frame.status.dtype)
    running = np.ones((n, ncols))
    node = np.full((n, ncols), -1, frame.node.dtype)
    values[:, :keep] = frame.values[:, :keep]
    status[:, :keep] = frame.status[:, :keep]
    running[:, :keep] = frame.running[:, :keep]
    node[:, :keep] = frame.node[:, :keep]
    return dataclasses.replace(frame, values=values, status=status, running=running, node=node)


def over_threshold(frame: Frame, columns: Sequence[ColumnSpec]) -> np.ndarray:
    over = np.zeros(frame.values.shape, bool)
    ok = frame.status == Code.OK
    for j, c in enumerate(columns):
        if c.threshold is None:
            continue
        v = frame.values[:, j]
        hit = v < c.threshold if c.threshold_below else v > c.threshold
        over[:, j] = hit & ok[:, j]
    return over
