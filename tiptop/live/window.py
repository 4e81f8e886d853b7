"""The live windows' one interface, and what most windows are made of.

A window (help, error log, top-down tree, hottest functions, a prompt, the signal
dialog...) is one object behind :class:`Window`: the controller opens it, hands it each
key first, has it draw itself over the screen, tells it when a refresh or the highlight
changed what it shows, and closes it. What it changes is the session's; what must be redone
it returns as a :class:`~tiptop.live.reaction.Reaction` (htop's ``InfoScreen`` and
``Panel`` play these parts). A window is added by a module of its own and one line in the
key registry (``tiptop.live.registry``).

:class:`TextWindow` is a box of lines, each wrapped at spaces to the box's width (a reason
is read whole at any terminal width, never cut at its edge: ``tiptop.live.text.Scrolled``),
scrolled when taller than the terminal, and placed by a :data:`Place`. Its text comes from
a function of the session, so a window of text is that function and a title.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Protocol

import urwid

from tiptop.live import palette as P
from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.text import Markup, Scrolled

#: The keys that move a highlight or scroll a text.
NAV_KEYS = frozenset({"up", "down", "page up", "page down", "home", "end"})
#: The keys that scroll the tree and functions windows (Up and Down move the highlight
#: under them, which they follow).
PAGE_KEYS = frozenset({"page up", "page down", "home", "end"})


class Window(Protocol):
    """One live window (see the module's docstring)."""

    #: What it is (``help``, ``tree``...): a key that opens a window of the name on top
    #: closes it instead.
    name: str
    #: True when it takes every key while open (a prompt, a dialog); else the keys it
    #: does not use go to the key registry.
    modal: bool

    def open(self, session: Session) -> None:
        """Take what it needs (a source, a profiler) and make its text."""
        ...

    def close(self) -> None:
        """Release what it took."""
        ...

    def key(self, key: str, session: Session) -> Reaction | None:
        """Use ``key`` and say what must be redone; None: not one of its keys."""
        ...

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """``body`` (the screen, ``cols`` x ``rows``) with this window over it."""
        ...

    def status(self) -> str | None:
        """The status line while it is open (a prompt's question and answer), or None."""
        ...

    def refresh(self, session: Session) -> None:
        """Take what it needs from a refresh of the main source (its own source's frame,
        its profiler's samples), just after it."""
        ...

    def update(self, session: Session) -> None:
        """Make its text again: the rows, the highlight or the settings changed."""
        ...


class Place(enum.Enum):
    """Where a window sits over the screen."""

    #: Full width, its bottom on the row above the footer: the title, tasks, status and
    #: header lines stay in sight above it (a taller text scrolls).
    ABOVE_FOOTER = enum.auto()
    #: :data:`MARGIN` columns in from each side, two rows above the bottom (the
    #: original's help box sits at column 5, docs/original.md 5.4).
    INSET = enum.auto()


#: Columns left free each side of an :attr:`Place.INSET` window.
MARGIN = 5


def boxed(body: urwid.Widget, title: str) -> urwid.Widget:
    """``body`` in a line box titled ``title``, in the windows' attribute."""
    return urwid.AttrMap(urwid.LineBox(body, title=title), P.WINDOW)


#: Rows a window :attr:`Place.ABOVE_FOOTER` leaves free: the title, tasks, status and
#: header lines above it, the footer below.
KEPT_ROWS = 5


def room(rows: int, place: Place) -> int:
    """The most rows a window at ``place`` takes of a screen of ``rows``."""
    return max(rows - KEPT_ROWS, 3) if place is Place.ABOVE_FOOTER else rows


class TextWindow:
    """A window of text (see the module's docstring) called ``name``: ``title``, its lines from
    ``text(session)`` made again at each refresh and highlight move, closed by Esc or one
    of ``keys`` (the keys that open it: they toggle it). Nav keys scroll it, or with
    ``follows``, Up and Down are left to move the highlight under it (the tree), and the
    others scroll it."""

    modal = False

    def __init__(
        self,
        name: str,
        title: str,
        text: Callable[[Session], Sequence[Markup]],
        keys: Sequence[str] = (),
        place: Place = Place.ABOVE_FOOTER,
        follows: bool = False,
    ) -> None:
        self.name = name
        self.title = title
        self.text = text
        self.closing = frozenset({"esc", *keys})
        self.place = place
        self.scrolls = PAGE_KEYS if follows else NAV_KEYS
        hint = "PgUp/PgDn scroll" if follows else "Up/Down scroll"
        self.body = Scrolled((), hint)

    def open(self, session: Session) -> None:
        """Make its text."""
        self.update(session)

    def close(self) -> None:
        """Nothing to release: its text goes with it."""
        self.body.set_lines(())

    def key(self, key: str, session: Session) -> Reaction | None:
        """Esc and its own keys close it; navigation keys scroll it."""
        if key in self.closing:
            return Reaction(Effect.CLOSE)
        if key in self.scrolls and self.body.scroll(key):
            return NOTHING
        return None

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """The box over ``body``, as high as its wrapped lines (at most the screen)."""
        width = cols - 2 * MARGIN if self.place is Place.INSET and cols >= 4 * MARGIN else cols
        height = min(self.body.rows_at(width - 2) + 2, room(rows, self.place))
        left = (cols - width) // 2
        top = rows - height - (2 if self.place is Place.INSET else 1)
        return urwid.Overlay(
            boxed(self.body, self.title),
            body,
            ("fixed left", left),
            width,
            ("fixed top", max(top, 0)),
            height,
        )

    def status(self) -> str | None:
        """It leaves the status line alone."""
        return None

    def refresh(self, session: Session) -> None:
        """A text window has nothing of its own to refresh: its text is made again by
        :meth:`update`, after the rows."""
        return None

    def update(self, session: Session) -> None:
        """Its lines again, from the session."""
        self.body.set_lines(self.text(session))


__all__ = [
    "KEPT_ROWS",
    "MARGIN",
    "NAV_KEYS",
    "PAGE_KEYS",
    "Place",
    "TextWindow",
    "Window",
    "boxed",
    "room",
]
