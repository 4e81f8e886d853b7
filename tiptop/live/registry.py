"""The one registry of live keys: each key, its words in the help window and the man page,
and its handler (below's command registry, htop's key table of ``Action.c``).

A :class:`Binding` holds the keys (urwid's names), the help words, the help group and
``act(session, key) -> Reaction`` (``tiptop.live.keys``, or :func:`opens`: a window's
toggle). The help window, the man page's test and the controller read this table; nothing
else lists keys. The sources' own keys are here too (``G``: rows by cgroup,
``tiptop.sources.bycgroup``; ``[ ] { } * /`` and space: ``--replay``,
``tiptop.recording.replay``), their handler handing them to the source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tiptop.live import keys as K
from tiptop.live.reaction import Reaction
from tiptop.live.session import Session
from tiptop.live.window import Window
from tiptop.live.windows.errors import ErrorWindow
from tiptop.live.windows.functions import FunctionsWindow
from tiptop.live.windows.help import help_window
from tiptop.live.windows.messages import messages_window
from tiptop.live.windows.tree import TreeWindow
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
    Binding(("h", "?"), "this help", SELECT, opens(_help_window, "h", "?")),
    Binding(("e",), "error log", SELECT, opens(ErrorWindow, "e")),
    Binding((WHOLE_KEY,), "messages said, whole", SELECT, opens(messages_window, WHOLE_KEY)),
    Binding(("esc",), "close the window", SELECT, K.close, False),
    Binding(("q",), "quit", SELECT, K.quit_),
    Binding(("left", "-"), "previous screen", ORDER, K.previous_screen),
    Binding(("right", "+"), "next screen", ORDER, K.next_screen),
    Binding(("<",), "sort on the column to the left", ORDER, K.sort_left),
    Binding((">",), "sort on the column to the right", ORDER, K.sort_right),
    Binding(("R",), "reverse sort", ORDER, K.reverse),
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
    Binding(("k",), "kill a PID", ACTIONS, K.ask_kill),
    Binding(("W",), "write ~/.config/tiptop/tiptoprc (or -W DIR)", ACTIONS, K.write_config),
    Binding(("[", "]"), "a refresh back/forward", REPLAY, K.from_source),
    Binding(("{", "}"), "a minute back/forward", REPLAY, K.from_source),
    Binding((" ",), "pause", REPLAY, K.from_source),
    Binding(("*", "/"), "twice/half as fast", REPLAY, K.from_source),
)

#: Each key's binding.
BY_KEY: dict[str, Binding] = {k: b for b in BINDINGS for k in b.keys}


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
