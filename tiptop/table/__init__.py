"""Filter, sort and format a Frame's rows: shared by batch and live; no I/O.

CONTRACT (implemented by the command-line work; live mode depends on it):

``View``: dataclass of presentation settings: ``sort_column`` (-1 = PID, 0..k-1 = the
screen's columns, k = COMMAND), ``descending`` (True), ``show_idle`` (-i),
``cpu_threshold`` (--cpu-min), ``show_user`` (-U), ``show_cmdline`` (-c), ``watch`` (pid or
name, -w), ``sticky``, ``pid_width``, ``name_filter`` (the live ``\\`` filter).

``rows(frame, screen, view) -> RowList``: the visible rows, filtered and sorted (a sequence
whose ``Row`` objects are made on first access).
``Row``: ``tid``, ``pid``, ``marker``, ``user``, ``cells`` (formatted strings, each the
header's width when a placeholder), ``status`` (per cell, ``Status`` codes as ints),
``multiplexed`` (per cell bool), ``over_threshold`` (per cell bool), ``command``, ``dead``,
``watched``. A row's cells are formatted when first asked for, in one ``str.format`` call
from the screen's compiled ``tiptop.screens.printf.RowFormat``: live mode formats only the
rows on screen.
``header(screen, view) -> str``: the column header with the sort column in ``[ ]``.
``matches(command, text)``: the rule of the live search and filter (case ignored);
``RowList.find(text, start)``: the next row whose command matches.
``format_row(row, view) -> str``: one row as the original prints it (without prefixes).

Layout rules follow docs/original.md section 6.2 (the original's ``build_rows()``): the
row is ``"%*d%c "`` (id, ``+``/``-``/space marker), ``"%-10s "`` for ``-U``, each cell and
one space, then the name or command line. Imports only ``frame``, ``screens`` and ``cells``.

The package: :mod:`.select` (which rows, in what order), :mod:`.rows` (rows as objects,
the header), :mod:`.text` (batch's lines), :mod:`.why` (one task's top-down tree: imported
by those that draw one, ``--why`` and the live ``t`` window, not by every start).
"""

from tiptop.table.rows import Row, RowList, format_row, header, path_cell, path_nodes, rows
from tiptop.table.select import (
    DEFAULT_CPU_THRESHOLD,
    View,
    builtin_variables,
    conform,
    matches,
    order,
    pid_width_for,
    visible,
)
from tiptop.table.text import text_lines

__all__ = [
    "DEFAULT_CPU_THRESHOLD",
    "Row",
    "RowList",
    "View",
    "builtin_variables",
    "conform",
    "format_row",
    "header",
    "matches",
    "order",
    "path_cell",
    "path_nodes",
    "pid_width_for",
    "rows",
    "text_lines",
    "visible",
]
