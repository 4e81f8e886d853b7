"""Filter, sort and format a Frame's rows: shared by batch and live; no I/O.

CONTRACT (implemented by the command-line work; live mode depends on it):

``View``: dataclass of presentation settings: ``sort_column`` (-1 = PID, 0..k-1 = the
screen's columns, k = COMMAND), ``descending`` (True), ``show_idle`` (-i),
``cpu_threshold`` (--cpu-min), ``show_user`` (-U), ``show_cmdline`` (-c), ``watch`` (pid or
name, -w), ``sticky``, ``pid_width``.

``rows(frame, screen, view) -> list[Row]``: the visible rows, filtered and sorted.
``Row``: ``tid``, ``pid``, ``marker``, ``user``, ``cells`` (formatted strings, each the
header's width when a placeholder), ``status`` (per cell), ``multiplexed`` (per cell bool),
``over_threshold`` (per cell bool), ``command``, ``dead``, ``watched``.
``header(screen, view) -> str``: the column header with the sort column in ``[ ]``.
``format_row(row, view) -> str``: one row as the original prints it (without prefixes).

Layout rules follow docs/original.md section 6.2 (the original's ``build_rows()``): the
row is ``"%*d%c "`` (id, ``+``/``-``/space marker), ``"%-10s "`` for ``-U``, each cell and
one space, then the name or command line. Imports only ``frame``, ``spec``, ``cells`` and
``errors``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tiptop.cells import PLACEHOLDER, Status
from tiptop.errors import SpecError
from tiptop.frame import Frame
from tiptop.screens.model import ColumnSpec, ScreenSpec
from tiptop.screens.printf import compile_format
from tiptop.screens.variables import VARIABLES

#: The original's default ``--cpu-min`` (percent).
DEFAULT_CPU_THRESHOLD = 0.00001


@dataclass
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


@dataclass
class Row:
    """One visible row, already formatted."""

    tid: int
    pid: int
    marker: str
    user: str
    cells: list[str]
    status: list[Status]
    multiplexed: list[bool]
    over_threshold: list[bool]
    command: str
    #: Index of the row in the frame it came from (for csv/json and live lookups).
    index: int
    dead: bool = False
    watched: bool = False
    values: list[float] = field(default_factory=list)


# --------------------------------------------------------------------------- printf


def check_formats(screen: ScreenSpec) -> None:
    """Raise :class:`SpecError` (with the column's location) if a format cannot be used."""
    for col in screen.columns:
        try:
            compile_format(col.format)
        except SpecError as exc:
            raise SpecError(
                f"screen '{screen.name}', column '{col.header.strip()}': {exc.message}",
                screen.source if screen.source != "builtin" else None,
                col.line,
                col.column,
            ) from None


def builtin_variables() -> list[tuple[str, str]]:
    """``(name, description)`` of each built-in variable of column expressions, in
    registry order (``tiptop.screens.variables``; the live help window lists them)."""
    return [(v.name, v.description) for v in VARIABLES]


def pid_width_for(pid_max: int) -> int:
    """The id column width: 5, plus the digits of ``pid_max - 1`` beyond 5 (2.3.2 rule)."""
    return 5 + max(0, len(str(max(pid_max - 1, 1))) - 5)


# --------------------------------------------------------------------------- rows


def _command(frame: Frame, i: int, show_cmdline: bool) -> str:
    if show_cmdline and frame.cmdline[i]:
        return frame.cmdline[i]
    return frame.name[i]


def _watched(frame: Frame, i: int, view: View) -> bool:
    w = view.watch
    if w is None:
        return False
    if isinstance(w, int):
        return int(frame.tid[i]) == w
    return w in _command(frame, i, view.show_cmdline)


def visible(frame: Frame, view: View) -> np.ndarray:
    """Boolean mask of the rows shown: idle rows (``cpu_total < cpu_threshold``) are hidden
    unless ``show_idle``; dead rows are shown (the sampler keeps them after their last
    interval only in sticky mode); watched rows are always shown."""
    n = len(frame)
    if view.show_idle or n == 0:
        return np.ones(n, bool)
    cpu = np.nan_to_num(frame.cpu_total, nan=0.0)
    mask = cpu >= view.cpu_threshold
    if view.watch is not None:
        mask |= np.fromiter((_watched(frame, i, view) for i in range(n)), bool, n)
    return mask


def order(frame: Frame, idx: np.ndarray, view: View, ncols: int) -> np.ndarray:
    """The indices ``idx`` sorted on the view's column: stable; non-OK cells last in
    either direction; PID numerically; COMMAND by string."""
    if len(idx) == 0:
        return idx
    col = view.sort_column
    if col < 0:
        key = frame.tid[idx].astype(np.float64)
        bad = np.zeros(len(idx), bool)
    elif col >= ncols:
        cmds = [_command(frame, int(i), view.show_cmdline) for i in idx]
        perm = sorted(range(len(idx)), key=cmds.__getitem__, reverse=view.descending)
        return idx[np.asarray(perm, np.int64)]
    else:
        key = frame.values[idx, col].astype(np.float64)
        bad = (frame.status[idx, col] != Status.OK) | np.isnan(key)
        key = np.where(bad, 0.0, key)
    if view.descending:
        key = -key
    # np.lexsort is stable; the last key is primary: OK cells first, then by value.
    return idx[np.lexsort((key, bad))]


def rows(frame: Frame, screen: ScreenSpec, view: View) -> list[Row]:
    """The visible rows of ``frame``, filtered and sorted per ``view``, cells formatted."""
    columns = screen.columns
    ncols = len(columns)
    frame = conform(frame, ncols)
    idx = np.flatnonzero(visible(frame, view))
    idx = order(frame, idx, view, ncols)
    fmts = [compile_format(c.format) for c in columns]
    widths = [len(c.header) for c in columns]
    placeholders = {s: [ph.rjust(w) for w in widths] for s, ph in PLACEHOLDER.items()}
    multiplexed = frame.multiplexed()
    over = _over_threshold(frame, columns)
    out: list[Row] = []
    values = frame.values
    status = frame.status
    for i in idx.tolist():
        vals = values[i].tolist()
        sts = status[i].tolist()
        # Every cell is at least its header's width (rjust is a no-op for the usual
        # format as wide as its header), so rows line up under the header.
        cells = [
            fmts[j](v).rjust(widths[j]) if s == 0 and v == v else placeholders[Status(s or 3)][j]
            for j, (v, s) in enumerate(zip(vals, sts, strict=True))
        ]
        out.append(
            Row(
                tid=int(frame.tid[i]),
                pid=int(frame.pid[i]),
                marker=frame.marker[i] or " ",
                user=frame.user[i],
                cells=cells,
                status=[Status(s) for s in sts],
                multiplexed=multiplexed[i].tolist(),
                over_threshold=over[i].tolist(),
                command=_command(frame, i, view.show_cmdline),
                dead=bool(frame.dead[i]),
                watched=_watched(frame, i, view),
                index=i,
                values=vals,
            )
        )
    return out


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
    status = np.full((n, ncols), Status.UNREADABLE, frame.status.dtype)
    running = np.ones((n, ncols))
    values[:, :keep] = frame.values[:, :keep]
    status[:, :keep] = frame.status[:, :keep]
    running[:, :keep] = frame.running[:, :keep]
    return dataclasses.replace(frame, values=values, status=status, running=running)


def _over_threshold(frame: Frame, columns: Sequence[ColumnSpec]) -> np.ndarray:
    over = np.zeros(frame.values.shape, bool)
    ok = frame.status == Status.OK
    for j, c in enumerate(columns):
        if c.threshold is None:
            continue
        v = frame.values[:, j]
        hit = v < c.threshold if c.threshold_below else v > c.threshold
        over[:, j] = hit & ok[:, j]
    return over


# --------------------------------------------------------------------------- text


def header(screen: ScreenSpec, view: View) -> str:
    """The header line (docs/original.md 6.3): id, optional user, columns, COMMAND; the sort
    column wrapped in ``[ ]`` in place of its separators. Ends with a separator."""
    k = len(screen.columns)
    s = view.sort_column
    parts = [" " * max(view.pid_width - 4, 0)]
    parts.append("[PID]" if s == -1 else " PID ")
    if view.show_user:
        parts.append(" user      ")
    for j, col in enumerate(screen.columns):
        parts.append("[" if s == j else ("]" if s == j - 1 and s >= 0 else " "))
        parts.append(col.header)
    parts.append("[" if s == k else ("]" if s == k - 1 and s >= 0 else " "))
    parts.append("COMMAND")
    parts.append("]" if s == k else " ")
    return "".join(parts)


def format_row(row: Row, view: View, width: int | None = None) -> str:
    """One row as the original prints it, without prefixes and without ``DEAD``/``<---``
    (batch appends those). ``width`` cuts the line (live mode); batch never cuts, so full
    command lines survive (a defect of the original fixed)."""
    parts = [f"{row.tid:>{view.pid_width}d}{row.marker} "]
    if view.show_user:
        parts.append(f"{row.user:<10s} ")
    for cell in row.cells:
        parts.append(cell)
        parts.append(" ")
    parts.append(row.command)
    line = "".join(parts)
    return line if width is None else line[:width]
