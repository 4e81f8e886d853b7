"""The one registry of live keys: each key, its words in the help window and the man page,
and its handler (below's command registry, htop's key table of ``Action.c``).

A :class:`Binding` holds the keys (urwid's names), the help words, the help group and
``act(session, key) -> Reaction`` (``tiptop.live.keys``, or :func:`opens`: a window's
toggle). The help window, the man page's test and the controller read this table; nothing
else lists keys. The sources' own keys are here too (``G``: rows by cgroup,
``tiptop.sources.bycgroup``; ``[ ] { } ( )`` and space: ``--replay``,
``tiptop.recording.replay``), their handler handing them to the source.

htop's keys are bound where they take no key of the original's (docs/tiptop.1, "KEYS"):
F1 help, F3 and ``/`` search, F4 and ``\\`` filter, F9 and ``k`` signal, F10 quit, Space
tags, ``F`` follows, ``P`` ``M`` ``N`` sort; ``t`` stays the top-down tree (htop's tree
view), ``u`` ``p`` ``H`` ``K`` ``S`` ``c`` ``U`` stay the original's. A key bound to
nothing says so on the status line for :data:`HINT_SECONDS`, and which key helps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tiptop.live import keys as K
from tiptop.live.reaction import Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.window import Window
from tiptop.live.windows.errors import ErrorWindow
from tiptop.live.windows.functions import FunctionsWindow
from tiptop.live.windows.help import help_window
from tiptop.live.windows.messages import messages_window
from tiptop.live.windows.tree import TreeWindow
from tiptop.outside import printable
from tiptop.readonly import readonly

#: ``act(session, key) -> Reaction``: what a key does.
Handler = Callable[[Session, str], Reaction]


@readonly
class Binding:
    """Keys, what they do in words, their help group, and their handler."""

    keys: tuple[str, ...]
    words: str
    group: str
    act: Handler
    #: False for the keys that only move the view (navigation): every other key takes a
    #: frame at once, as the original's ``select()`` on stdin returns early.
    refreshes: bool = True


def opens(window: Callable[[Sequence[str]], Window], *keys: str) -> Handler:
    """The handler that opens the window ``window(keys)`` makes (``keys``, the ones bound
    to it, close it again)."""
    return lambda _session, _key: Reaction(opens=window(keys))


SELECT = "Selection and windows"
ORDER = "Screen and order"
SHOWN = "What is shown and counted"
ACTIONS = "Actions"
REPLAY = "Replay (--replay)"

#: The key that shows a text cut to the status line's width whole (the status line says
#: so after the text's first words).
WHOLE_KEY = "m"

#: How the help and the man page spell urwid's key names.
KEY_LABELS = {
    "left": "Left",
    "right": "Right",
    "up": "Up",
    "down": "Down",
    "page up": "PgUp",
    "page down": "PgDn",
    "home": "Home",
    "end": "End",
    "enter": "Enter",
    "esc": "Esc",
    " ": "space",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}


def _help_window(keys: Sequence[str]) -> Window:
    return help_window(key_help(), keys)


#: Every key of live mode, in the help window's order and groups.
BINDINGS: tuple[Binding, ...] = (
    Binding(("up", "down"), "move the highlight (in a window: scroll)", SELECT, K.move, False),
    Binding(
        ("page up", "page down", "home", "end"),
        "move it by a page, to the ends",
        SELECT,
        K.move,
        False,
    ),
    Binding(
        ("t", "enter"), "top-down tree of the highlighted task", SELECT, opens(TreeWindow, "t")
    ),
    Binding(("f",), "its hottest functions (sampled)", SELECT, opens(FunctionsWindow, "f")),
    Binding(("h", "?", "f1"), "this help", SELECT, opens(_help_window, "h", "?", "f1")),
    Binding(("e",), "error log", SELECT, opens(ErrorWindow, "e")),
    Binding((WHOLE_KEY,), "messages said, whole", SELECT, opens(messages_window, WHOLE_KEY)),
    Binding(("esc",), "close the window", SELECT, K.close, False),
    Binding(("q", "f10"), "quit", SELECT, K.quit_),
    Binding(("/", "f3"), "search a command (F3 or / again: the next)", SELECT, K.search),
    Binding(("\\", "f4"), "filter: only commands holding a text", SELECT, K.filter_rows),
    Binding(("F",), "follow the highlighted task", SELECT, K.follow),
    Binding(("left", "-"), "previous screen", ORDER, K.previous_screen),
    Binding(("right", "+"), "next screen", ORDER, K.next_screen),
    Binding(("<",), "sort on the column to the left", ORDER, K.sort_left),
    Binding((">",), "sort on the column to the right", ORDER, K.sort_right),
    Binding(("R",), "reverse sort", ORDER, K.reverse),
    Binding(("P",), "sort on %CPU", ORDER, K.sort_on),
    Binding(("M",), "sort on the first memory column (MEM, MISS)", ORDER, K.sort_on),
    Binding(("N",), "sort on PID", ORDER, K.sort_on),
    Binding(("d", "s"), "delay", SHOWN, K.ask_delay),
    Binding(("H",), "threads", SHOWN, K.threads),
    Binding(("i",), "idle tasks", SHOWN, K.idle),
    Binding(("K",), "kernel mode", SHOWN, K.kernel),
    Binding(("S",), "sticky (dead tasks stay)", SHOWN, K.sticky),
    Binding(("c",), "command line", SHOWN, K.cmdline),
    Binding(("U",), "user column", SHOWN, K.user_column),
    Binding(("u",), "only a user", SHOWN, K.ask_user),
    Binding(("p",), "only a PID or name", SHOWN, K.ask_only),
    Binding(("w",), "watch a PID or name", SHOWN, K.ask_watch),
    Binding(("G",), "rows by cgroup", SHOWN, K.from_source),
    Binding((" ",), "tag the task (--replay: pause)", ACTIONS, K.tag, False),
    Binding(("k", "f9"), "signal the tagged or highlighted tasks", ACTIONS, K.signal_tasks),
    Binding(("W",), "write ~/.config/tiptop/tiptoprc (or -W DIR)", ACTIONS, K.write_config),
    Binding(("[", "]"), "a refresh back/forward", REPLAY, K.from_source),
    Binding(("{", "}"), "a minute back/forward", REPLAY, K.from_source),
    Binding(("(", ")"), "half/twice as fast", REPLAY, K.from_source),
)

#: Each key's binding.
BY_KEY: dict[str, Binding] = {k: b for b in BINDINGS for k in b.keys}


#: How long the status line says a key is bound to nothing.
HINT_SECONDS = 2.0


def unknown(key: str) -> Reaction:
    """What a key bound to nothing does: says so, and which key lists the keys, for
    :data:`HINT_SECONDS`; the frame is taken at once as for any key (the original's)."""
    shown = printable(label([key]))[:20]
    return Reaction(
        Effect.REFRESH, says=f"Unknown key '{shown}': h or F1 lists the keys", lasting=HINT_SECONDS
    )


def lookup(key: str) -> Binding | None:
    """The binding of ``key``, or None for a key nothing is bound to."""
    return BY_KEY.get(key)


def label(keys: Sequence[str]) -> str:
    """Keys as the help spells them: ``PgUp PgDn Home End``."""
    return " ".join(KEY_LABELS.get(k, k) for k in keys)


def key_help() -> list[str]:
    """The help window's keys, one binding per line under their group's title:
    ``  Up Down          move the highlight (in a window: scroll)``."""
    width = max(len(label(b.keys)) for b in BINDINGS)
    lines: list[str] = []
    group = None
    for b in BINDINGS:
        if b.group != group:
            lines += ["", f"{b.group}:"] if lines else [f"{b.group}:"]
            group = b.group
        lines.append(f"  {label(b.keys).ljust(width)}  {b.words}")
    return lines


__all__ = [
    "BINDINGS",
    "BY_KEY",
    "KEY_LABELS",
    "WHOLE_KEY",
    "Binding",
    "Handler",
    "key_help",
    "label",
    "lookup",
]
