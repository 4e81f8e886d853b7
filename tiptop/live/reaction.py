"""What a key asks of the live session: a :class:`Reaction`, which the controller
(:class:`tiptop.live.app.LiveApp`) applies in one place.

A key handler (``tiptop.live.registry``) or an open window (``tiptop.live.window``) changes
what it owns (the settings, the sort, its own text) and returns what must be redone: take a
frame now, lay the rows out again, reconfigure the sampler, open or close a window, say
something on the status line, quit. This is htop's ``Htop_Reaction`` (a bit set each key
handler returns to its main loop, htop's Action.h), with the window to open and the words
to say carried along.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from tiptop.readonly import readonly

if TYPE_CHECKING:
    from tiptop.live.window import Window


class Effect(enum.Flag):
    """What the controller redoes after a key, in the order it does it."""

    NONE = 0
    #: Close the window on top (Esc, a window's own key, a prompt answered).
    CLOSE = enum.auto()
    #: Reconfigure the sampler for the state's screen and settings (counters reopened);
    #: an empty table until its first refresh, 0.2 s later.
    RESTART = enum.auto()
    #: Take a frame now, the next delay counted from here: the original refreshes at
    #: any key (docs/original.md 5.2).
    REFRESH = enum.auto()
    #: The rows again from the frame on display (a sort, a filter, a tag).
    REBUILD = enum.auto()
    #: The highlight moved: the windows about the highlighted task follow it.
    FOLLOW = enum.auto()
    #: Leave live mode with :attr:`Reaction.code`.
    QUIT = enum.auto()


@readonly
class Reaction:
    """A key's outcome (see the module's docstring)."""

    effects: Effect = Effect.NONE
    #: A window to open on top; when one of its kind is on top already, that one closes
    #: instead (a window's key toggles it).
    opens: Window | None = None
    #: What the status line says from now on; None leaves it as it is.
    says: str | None = None
    #: How many seconds it is said (None: until the next key).
    lasting: float | None = None
    #: The exit status, with :attr:`Effect.QUIT`.
    code: int = 0


#: Nothing to redo (a key that only scrolled a window, or moved a prompt's text).
NOTHING = Reaction()


def saying(text: str, effects: Effect = Effect.NONE) -> Reaction:
    """A reaction that says ``text`` on the status line (until the next key)."""
    return Reaction(effects, says=text)


__all__ = ["NOTHING", "Effect", "Reaction", "saying"]
