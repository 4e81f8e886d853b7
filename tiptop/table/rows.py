"""A view's rows as objects and as text: :class:`Row` (cells formatted when first asked
for), :func:`rows`, the header and one row's line (docs/original.md 6.2 and 6.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

import numpy as np

from tiptop.cells import Code
from tiptop.frame import Frame
from tiptop.readonly import mutable
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec
from tiptop.screens.printf import RowFormat, row_format
from tiptop.table.select import (
    View,
    command_of,
    is_watched,
    matches,
    over_threshold,
    shown_rows,
)

if TYPE_CHECKING:
    from tiptop.table.tree import Tree


class Row:
    """One visible row. Its cells are formatted when first asked for (live mode formats
    only the rows on screen), from the screen's :class:`RowFormat`; ``status``, ``values``,
    ``multiplexed`` and ``over_threshold`` are read from the rows' shared arrays then too."""

    __slots__ = (
        "_block",
        "_k",
        "_text",
        "branch",
        "command",
        "dead",
        "depth",
        "group",
        "index",
        "marker",
        "pid",
        "summed",
        "tid",
        "user",
        "watched",
    )

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
        summed: bool = False,
        depth: int = 0,
        branch: str = "",
        group: str | None = None,
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
        #: The row sums a cgroup's tasks (rows by cgroup): its PID is their smallest.
        self.summed = summed
        #: 0, or 1 for a task shown beneath its group row (``tiptop.table.tree``).
        self.depth = depth
        #: The tree's drawing before the name (``tiptop.table.tree.BRANCH``...); "" when
        #: the rows are no tree.
        self.branch = branch
        #: In a tree, the name of the group row this row is or is beneath; else None.
        self.group = group

    @property
    def values(self) -> list[float]:
        """The cells' values (``nan`` where not OK)."""
        return self._block.values[self._k].tolist()

    @property
    def nodes(self) -> list[int]:
        """The cells' nodes: a bottleneck cell's index in its column's labels, -1 for
        none and in every other column (``Frame.node``)."""
        return self._block.node[self._k].tolist()

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
        return b.fmt.cells(self.values, b.codes(self._k), self.nodes if b.fmt.paths else ())

    @property
    def cells_text(self) -> str:
        """The cells, each followed by one space: the row's middle (formatted once)."""
        if self._text is None:
            b = self._block
            nodes = self.nodes if b.fmt.paths else ()
            self._text = b.fmt.text(self.values, b.codes(self._k), nodes)
        return self._text

    def __repr__(self) -> str:
        return f"Row(tid={self.tid}, command={self.command!r}, cells={self.cells!r})"


def rows(frame: Frame, screen: ScreenSpec, view: View) -> RowList:
    """The visible rows of ``frame``, filtered and sorted per ``view``; a :class:`Row` is
    made when first asked for, and its cells formatted when first asked for (live mode
    touches only the rows on screen). Rows by cgroup with their tasks and a view's
    ``folding`` are a tree (``tiptop.table.tree``): each group row, its tasks beneath it."""
    columns = screen.columns
    shape: Tree | None = None
    if view.folding is not None and frame.members is not None:
        from tiptop.table.tree import tree  # only a folded view: a batch run never does

        shape = tree(frame, len(columns), view, view.folding)
        frame, idx = shape.frame, shape.order
    else:
        frame, idx = shown_rows(frame, len(columns), view)
    block = _Block(
        fmt=row_format(tuple(columns)),
        values=frame.values[idx],
        status=frame.status[idx],
        node=frame.node[idx],
        multiplexed=frame.multiplexed()[idx],
        over=over_threshold(frame, columns)[idx],
    )
    return RowList(frame, view, block, idx, shape)


class RowList(Sequence[Row]):
    """The visible rows in display order, each :class:`Row` built on first access; with a
    ``tree``, its group rows with their tasks beneath them."""

    def __init__(
        self, frame: Frame, view: View, block: _Block, idx: np.ndarray, tree: Tree | None = None
    ) -> None:
        self._frame = frame
        self._view = view
        self._block = block
        self._idx = idx.tolist()
        self._made: list[Row | None] = [None] * len(self._idx)
        self._tree = tree
        #: Rows of the frame from this index on are tasks beneath a group row (a tree's).
        self._tasks_from = len(frame) if tree is None else tree.groups
        self._top = len(idx) if tree is None else int((idx < tree.groups).sum())

    def depth_of(self, k: int) -> int:
        """Row ``k``'s depth: 1 for a task beneath its group row, else 0."""
        return int(self._idx[k] >= self._tasks_from)

    def top_level(self) -> int:
        """How many rows are not beneath another (all of them but a tree's tasks)."""
        return self._top

    def level_frame(self, k: int) -> Frame:
        """The frame that row ``k`` is a row of, in which its id is one row's: a tree's
        group rows, or its tasks (each group row's id is the smallest of its tasks'), else
        the frame shown."""
        if self._tree is None:
            return self._frame
        m = self._tasks_from
        return self._frame.take(slice(m, None) if self.depth_of(k) else slice(0, m))

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

    def find(self, text: str, start: int = 0) -> int | None:
        """The display position of the first row at or after ``start`` (going round to
        the top) whose command :func:`matches` ``text``, or None (from the frame's names:
        no row is built)."""
        n = len(self._idx)
        f, cmdline = self._frame, self._view.show_cmdline
        for k in range(n):
            pos = (start + k) % n
            if matches(command_of(f, self._idx[pos], cmdline), text):
                return pos
        return None

    def position_of(self, tid: int, depth: int = 0) -> int | None:
        """The display position of task ``tid``'s row at ``depth`` (a tree has a group
        row and its task of one id), else at another depth, or None when it has none (from
        the frame's tid array: no row is built)."""
        found = None
        for i in np.flatnonzero(self._frame.tid == tid).tolist():  # its frame row(s)
            try:
                k = self._idx.index(i)
            except ValueError:  # filtered out of the view
                continue
            if self.depth_of(k) == depth:
                return k
            found = k if found is None else found
        return found

    def _make(self, k: int) -> Row:
        f, view, i = self._frame, self._view, self._idx[k]
        t = self._tree
        depth = self.depth_of(k)
        return Row(
            self._block,
            k,
            tid=int(f.tid[i]),
            pid=int(f.pid[i]),
            marker=f.marker[i] or " ",
            user=f.user[i],
            command=command_of(f, i, view.show_cmdline),
            index=i,
            dead=bool(f.dead[i]),
            watched=view.watch is not None and is_watched(f, i, view),
            summed=f.by_cgroup and not depth,
            depth=depth,
            branch="" if t is None else t.branch[k],
            group=None if t is None else t.group[k],
        )


@mutable
class _Block:
    """The cell arrays of the visible rows, in display order (shared by their Rows)."""

    fmt: RowFormat
    values: np.ndarray
    status: np.ndarray
    node: np.ndarray
    multiplexed: np.ndarray
    over: np.ndarray
    _codes: bytes | None = None

    def codes(self, k: int) -> bytes:
        """Row ``k``'s cell codes (see :func:`cell_code_array`)."""
        if self._codes is None:
            self._codes = cell_code_array(self.values, self.status).tobytes()
        n = self.status.shape[1]
        return self._codes[k * n : (k + 1) * n]


def cell_code_array(values: np.ndarray, status: np.ndarray) -> np.ndarray:
    """The cells' statuses as uint8; UNREADABLE for an OK cell holding nan."""
    c = status.astype(np.uint8)
    c[(c == Code.OK) & np.isnan(values)] = Code.UNREADABLE
    return c


# --------------------------------------------------------------------------- text


def header(screen: ScreenSpec, view: View) -> str:
    """The header line (docs/original.md 6.3): id, optional user, columns, COMMAND (or
    CGROUP when the rows are cgroups, ``View.name_header``), each after a separator; the
    sort column wrapped in ``[ ]``. Ends with a separator.

    The original put ``[`` and ``]`` in place of the separators around the sort column,
    so ``[ %CPU]`` was two fields to awk over one field of the rows (issue 50). Here
    ``[`` takes the header's last leading blank, so that its text stays over its cells,
    and ``]`` the separator after it: `` [%CPU]``, one field, the line as wide as the
    original's. Where the next name has no leading blank (COMMAND) a blank is added
    after ``]``, and a name with none gets `` [`` before it: the line is then one wider,
    its fields still apart."""
    s = view.sort_column
    parts = [" " * max(view.pid_width - 4, 0)]
    parts.append("[PID]" if s == -1 else " PID ")
    if view.show_user:
        parts.append(" user      ")
    names = [c.header for c in screen.columns] + [view.name_header]
    for j, name in enumerate(names):
        text = name.lstrip(" ")
        blank = len(name) - len(text)
        if s == j:
            parts.append(" " * blank + f"[{text}" if blank else f" [{text}")
        elif s == j - 1 and s >= 0:
            parts.append(("]" if blank else "] ") + name)
        else:
            parts.append(" " + name)
    parts.append("]" if s == len(names) - 1 else " ")
    return "".join(parts)


def format_row(row: Row, view: View, width: int | None = None) -> str:
    """One row as the original prints it, without prefixes and without ``DEAD``/``<---``
    (batch appends those). ``width`` cuts the line (live mode); batch never cuts, so full
    command lines survive (a defect of the original fixed)."""
    line = row_line(row.tid, row.marker, row.user, row.cells_text, row.branch + row.command, view)
    return line if width is None else line[:width]


def row_line(tid: int, marker: str, user: str, cells: str, command: str, view: View) -> str:
    """A row's text (docs/original.md 6.2): ``"%*d%c "`` id and marker, ``"%-10s "`` user
    with ``-U``, the cells (each followed by a space), the name or command line."""
    who = f"{user:<10s} " if view.show_user else ""
    return f"{tid:>{view.pid_width}d}{marker} {who}{cells}{command}"


def path_nodes(screen: ScreenSpec) -> list[tuple[str, ...] | None]:
    """Per column, the label table of a ``bottleneck(...)`` column, None for the others
    (tiptop/screens/bottleneck.py)."""
    return [c.labels if c.path is not None else None for c in screen_columns(screen)]


def path_cell(labels: Sequence[str], node: int) -> str:
    """A bottleneck cell's node label (``-`` for none)."""
    return labels[node] if 0 <= node < len(labels) else "-"
