"""Filter, sort and format a Frame's rows: shared by batch and live; no I/O.

CONTRACT (implemented by the command-line work; live mode depends on it):

``View``: dataclass of presentation settings: ``sort_column`` (-1 = PID, 0..k-1 = the
screen's columns, k = COMMAND), ``descending`` (True), ``show_idle`` (-i),
``cpu_threshold`` (--cpu-min), ``show_user`` (-U), ``show_cmdline`` (-c), ``watch`` (pid or
name, -w), ``sticky``, ``pid_width``.

``rows(frame, screen, view) -> RowList``: the visible rows, filtered and sorted (a sequence
whose ``Row`` objects are made on first access).
``Row``: ``tid``, ``pid``, ``marker``, ``user``, ``cells`` (formatted strings, each the
header's width when a placeholder), ``status`` (per cell, ``Status`` codes as ints),
``multiplexed`` (per cell bool), ``over_threshold`` (per cell bool), ``command``, ``dead``,
``watched``. A row's cells are formatted when first asked for, in one ``str.format`` call
from the screen's compiled ``tiptop.screens.printf.RowFormat``: live mode formats only the
rows on screen.
``header(screen, view) -> str``: the column header with the sort column in ``[ ]``.
``format_row(row, view) -> str``: one row as the original prints it (without prefixes).

Layout rules follow docs/original.md section 6.2 (the original's ``build_rows()``): the
row is ``"%*d%c "`` (id, ``+``/``-``/space marker), ``"%-10s "`` for ``-U``, each cell and
one space, then the name or command line. Imports only ``frame``, ``screens`` and ``cells``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from tiptop.cells import Status, valued
from tiptop.frame import Frame
from tiptop.screens.model import ColumnSpec, ScreenSpec
from tiptop.screens.printf import RowFormat, row_format
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


class Row:
    """One visible row. Its cells are formatted when first asked for (live mode formats
    only the rows on screen), from the screen's :class:`RowFormat`; ``status``, ``values``,
    ``multiplexed`` and ``over_threshold`` are read from the rows' shared arrays then too."""

    __slots__ = ("_block", "_k", "_text", "command", "dead", "index", "marker", "pid", "tid",
                 "user", "watched")  # fmt: skip

    def __init__(
        self,
        block: _Block,
        k: int,
        *,
        tid: int,
        pid: int,
        marker: str,
        user: str,
        command: str,
        index: int,
        dead: bool = False,
        watched: bool = False,
    ) -> None:
        self._block = block
        self._k = k
        self._text: str | None = None
        self.tid = tid
        self.pid = pid
        self.marker = marker
        self.user = user
        self.command = command
        #: Index of the row in the frame it came from (for csv/json and live lookups).
        self.index = index
        self.dead = dead
        self.watched = watched

    @property
    def values(self) -> list[float]:
        """The cells' values (``nan`` where not OK)."""
        return self._block.values[self._k].tolist()

    @property
    def status(self) -> list[int]:
        """The cells' :class:`Status` codes, as ints (``Status`` members compare equal)."""
        return self._block.status[self._k].tolist()

    @property
    def multiplexed(self) -> list[bool]:
        """Per cell: its value was scaled (its counters ran part of the interval)."""
        return self._block.multiplexed[self._k].tolist()

    @property
    def over_threshold(self) -> list[bool]:
        """Per cell: its value is past the column's threshold."""
        return self._block.over[self._k].tolist()

    @property
    def cells(self) -> list[str]:
        """The formatted cells, each at least its header's width."""
        b = self._block
        return b.fmt.cells(self.values, b.codes(self._k))

    @property
    def cells_text(self) -> str:
        """The cells, each followed by one space: the row's middle (formatted once)."""
        if self._text is None:
            b = self._block
            self._text = b.fmt.text(self.values, b.codes(self._k))
        return self._text

    def __repr__(self) -> str:
        return f"Row(tid={self.tid}, command={self.command!r}, cells={self.cells!r})"


# --------------------------------------------------------------------------- settings


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
    """The indices ``idx`` sorted on the view's column: stable; cells without a value last in
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
        bad = ~valued(frame.status[idx, col]) | np.isnan(key)
        key = np.where(bad, 0.0, key)
    if view.descending:
        key = -key
    # np.lexsort is stable; the last key is primary: OK cells first, then by value.
    return idx[np.lexsort((key, bad))]


def _shown(frame: Frame, ncols: int, view: View) -> tuple[Frame, np.ndarray]:
    """``frame`` conformed to ``ncols`` cells and the indices of its visible rows, sorted."""
    frame = conform(frame, ncols)
    idx = np.flatnonzero(visible(frame, view))
    return frame, order(frame, idx, view, ncols)


def text_lines(
    frame: Frame, screen: ScreenSpec, view: View, memo: dict[tuple, str] | None = None
) -> list[str]:
    """The visible rows as :func:`format_row` prints them, followed by `` DEAD`` and
    `` <---`` where they apply: batch mode's lines, made without a :class:`Row` per row
    (every visible row is printed, so nothing is saved by formatting lazily).

    ``memo`` (the caller's, for one screen and view) maps what a row shows to its line, so
    a row as it was at the last call (a sleeping task) is not formatted again; it keeps
    this call's rows only. Cells not shown as values hold 0.0 there, and -0.0 is 0.0."""
    frame, idx = _shown(frame, len(screen.columns), view)
    fmt = row_format(tuple(screen.columns))
    ncols = len(screen.columns)
    shown = frame.values[idx]
    code_array = _cell_code_array(shown, frame.status[idx])
    codes = code_array.tobytes()
    values = (np.where(valued(code_array), shown, 0.0) + 0.0).tolist()
    markers, users = frame.marker, frame.user
    old, fresh = memo if memo is not None else {}, {}
    out: list[str] = []
    for k, (i, tid, dead) in enumerate(
        zip(idx.tolist(), frame.tid[idx].tolist(), frame.dead[idx].tolist(), strict=True)
    ):
        row_codes = codes[k * ncols : (k + 1) * ncols]
        command = _command(frame, i, view.show_cmdline)
        key = (tid, markers[i], users[i], command, dead, row_codes, *values[k])
        line = old.get(key)
        if line is None:
            cells = fmt.text(values[k], row_codes)
            line = _line(tid, markers[i] or " ", users[i], cells, command, view)
            if dead:
                line += " DEAD"
        fresh[key] = line
        if view.watch is not None and _watched(frame, i, view):
            line += " <---"
        out.append(line)
    if memo is not None:
        memo.clear()
        memo.update(fresh)
    return out


def rows(frame: Frame, screen: ScreenSpec, view: View) -> RowList:
    """The visible rows of ``frame``, filtered and sorted per ``view``; a :class:`Row` is
    made when first asked for, and its cells formatted when first asked for (live mode
    touches only the rows on screen)."""
    columns = screen.columns
    frame, idx = _shown(frame, len(columns), view)
    block = _Block(
        fmt=row_format(tuple(columns)),
        values=frame.values[idx],
        status=frame.status[idx],
        multiplexed=frame.multiplexed()[idx],
        over=_over_threshold(frame, columns)[idx],
    )
    return RowList(frame, view, block, idx)


class RowList(Sequence[Row]):
    """The visible rows in display order, each :class:`Row` built on first access."""

    def __init__(self, frame: Frame, view: View, block: _Block, idx: np.ndarray) -> None:
        self._frame = frame
        self._view = view
        self._block = block
        self._idx = idx.tolist()
        self._made: list[Row | None] = [None] * len(self._idx)

    def __len__(self) -> int:
        return len(self._idx)

    @overload
    def __getitem__(self, k: int) -> Row: ...
    @overload
    def __getitem__(self, k: slice) -> list[Row]: ...
    def __getitem__(self, k: int | slice) -> Row | list[Row]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self._idx)))]
        row = self._made[k]
        if row is None:
            row = self._made[k] = self._make(k if k >= 0 else k + len(self._idx))
        return row

    def _make(self, k: int) -> Row:
        f, view, i = self._frame, self._view, self._idx[k]
        return Row(
            self._block,
            k,
            tid=int(f.tid[i]),
            pid=int(f.pid[i]),
            marker=f.marker[i] or " ",
            user=f.user[i],
            command=_command(f, i, view.show_cmdline),
            index=i,
            dead=bool(f.dead[i]),
            watched=view.watch is not None and _watched(f, i, view),
        )


@dataclass
class _Block:
    """The cell arrays of the visible rows, in display order (shared by their Rows)."""

    fmt: RowFormat
    values: np.ndarray
    status: np.ndarray
    multiplexed: np.ndarray
    over: np.ndarray
    _codes: bytes | None = None

    def codes(self, k: int) -> bytes:
        """Row ``k``'s cell codes (see :func:`_cell_code_array`)."""
        if self._codes is None:
            self._codes = _cell_code_array(self.values, self.status).tobytes()
        n = self.status.shape[1]
        return self._codes[k * n : (k + 1) * n]


def _cell_code_array(values: np.ndarray, status: np.ndarray) -> np.ndarray:
    """The cells' statuses as uint8; UNREADABLE for an OK cell holding nan."""
    c = status.astype(np.uint8)
    c[(c == Status.OK) & np.isnan(values)] = Status.UNREADABLE
    return c


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
    line = _line(row.tid, row.marker, row.user, row.cells_text, row.command, view)
    return line if width is None else line[:width]


def _line(tid: int, marker: str, user: str, cells: str, command: str, view: View) -> str:
    """A row's text (docs/original.md 6.2): ``"%*d%c "`` id and marker, ``"%-10s "`` user
    with ``-U``, the cells (each followed by a space), the name or command line."""
    who = f"{user:<10s} " if view.show_user else ""
    return f"{tid:>{view.pid_width}d}{marker} {who}{cells}{command}"
