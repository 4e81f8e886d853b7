"""Display attributes named by meaning (never by colour), for 16 colours and monochrome.

Each entry is urwid's ``(name, foreground, background, mono)`` tuple. The original draws
watched tasks green and dead tasks red on the terminal's default background (colour pairs
1 and 2 with ``use_default_colors()``, docs/original.md section 5.1) and the column header
in reverse video; we keep those and add meanings it lacked: a cell over its column's
threshold, a cell whose counters were multiplexed (the value was scaled by
``time_enabled / time_running``, perf_event_open(2) "read_format"), and the error flag.
The mono column uses attributes only (bold, underline, standout, italics), so every meaning
stays visible on a terminal without colour.
"""

from __future__ import annotations

import os
from typing import Literal

#: Attribute names used by the widgets.
TITLE = "title"
MESSAGE = "message"
HEADER = "header"
HEADER_SORT = "header sort"
WATCHED = "watched"
DEAD = "dead"
OVER = "over threshold"
SCALED = "multiplexed"
ERRORS = "errors"
NOTICE = "notice"
WINDOW = "window"
WINDOW_TITLE = "window title"
WINDOW_REVERSE = "window reverse"
#: The selection cursor's row (``tiptop.live.rows.TaskTable``).
SELECTED = "selected"
#: A task tagged with Space (``k`` signals the tagged tasks), as htop draws them.
TAGGED = "tagged"

PALETTE: list[tuple[str, str, str, str]] = [
    (TITLE, "default,bold", "default", "bold"),
    (MESSAGE, "standout", "default", "standout"),
    (HEADER, "standout", "default", "standout"),
    (HEADER_SORT, "standout,bold", "default", "standout,bold"),
    (WATCHED, "dark green", "default", "bold"),
    (DEAD, "dark red", "default", "underline"),
    (OVER, "yellow,bold", "default", "standout,bold"),
    (SCALED, "dark cyan,underline", "default", "italics,underline"),
    (ERRORS, "light red,bold", "default", "bold"),
    (NOTICE, "brown", "default", "bold"),
    (WINDOW, "default", "default", "default"),
    (WINDOW_TITLE, "default,bold", "default", "bold"),
    (WINDOW_REVERSE, "standout", "default", "standout"),
    (SELECTED, "black", "dark cyan", "standout"),
    (TAGGED, "yellow,bold", "default", "bold,italics"),
]


def colours() -> Literal[1, 16]:
    """16 colours, or 1 (the mono palette) for ``NO_COLOR``/dumb or colourless terminals."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM", "dumb") in ("dumb", ""):
        return 1
    try:
        import curses
    except ImportError:  # a Python built without curses: assume the common case
        return 16
    try:
        curses.setupterm()
        n = curses.tigetnum("colors")
    except curses.error:  # no terminfo entry for $TERM: assume the common case
        return 16
    return 16 if n >= 8 else 1
