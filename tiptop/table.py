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
"""
