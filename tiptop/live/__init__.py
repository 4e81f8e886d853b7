"""Live mode: the interactive, top-like urwid screen (the original's ncurses mode).

``run(options, source, screens)`` is the whole public surface; ``cli.main`` calls it when
stdout is a terminal and ``-b`` is not given. Imports ``table``, ``frame``, ``options``,
``cells`` and ``errors`` only (the frame source is handed in).

urwid is imported here, once, without the other event loops' libraries: its
``urwid.event_loop`` package imports, at its own import, the loop of every such library
that is installed (Twisted, Tornado, GLib, trio, ZeroMQ), and tiptop runs urwid's
``SelectEventLoop`` only, so those imports are start-up CPU for nothing. Those names are
marked absent for the length of the import (``sys.modules[name] = None`` makes ``import
name`` raise ImportError: the Python reference, "The module cache") and put back after, so
nothing else in the process is affected.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

#: The libraries of urwid's other event loops (urwid/event_loop/__init__.py).
FOREIGN_LOOPS = ("twisted", "tornado", "gi", "trio", "zmq")


def _import_urwid_alone() -> None:
    """Import urwid with :data:`FOREIGN_LOOPS` not importable meanwhile (see the module doc)."""
    blocked = [name for name in FOREIGN_LOOPS if name not in sys.modules]
    for name in blocked:
        # None in sys.modules makes importing that name fail (the import system's
        # documented way to block one); typeshed types the values as modules only.
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import urwid  # noqa: F401  (imported for its side effect: loaded once, here)
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


_import_urwid_alone()

if TYPE_CHECKING:
    from tiptop.frame import FrameSource
    from tiptop.host import Host
    from tiptop.live.drill import Factory
    from tiptop.live.keys import Exporter
    from tiptop.live.where import ProfilerFactory
    from tiptop.options import Options
    from tiptop.screens.model import ScreenSpec
    from tiptop.spawn import Spawned


def run(
    options: Options,
    source: FrameSource,
    screens: Sequence[ScreenSpec],
    *,
    host: Host | None = None,
    exporter: Exporter | None = None,
    screen_index: int | None = None,
    started: bool = False,
    error_log: IO[str] | None = None,
    message: str = "",
    child: Spawned | None = None,
    drill: Factory | None = None,
    screen_number: Callable[[ScreenSpec], int] | None = None,
    where: ProfilerFactory | None = None,
    where_event: str = "",
) -> int:
    """Show the live screen until ``q`` (0), Ctrl-C (130) or ``-n`` refreshes (0).

    Calls ``source.start()`` first, then ``source.refresh()`` 0.2 s later and every
    ``options.delay`` seconds or at once on a key. ``screens`` are the ScreenSpecs the
    Left/Right keys rotate through. ``exporter(options, screens) -> str`` gives the text
    the ``W`` key writes to ``./.tiptoprc`` (``W`` says so when it is not given).
    ``screen_index`` is the index in ``screens`` of the source's screen (the caller
    resolved ``-S``; found from ``source.screen`` when not given); ``started=True`` when the
    caller already called ``source.start()`` (the ``--`` spawn path). ``host`` says what
    this machine allows (the ``K`` key). ``error_log`` (``-E``) gets each new message
    as a ``tiptop: ...`` line, as batch mode's
    stderr does. ``message`` is shown on the message line until the first key. ``child``
    (a ``tiptop.spawn.Spawned``) is the ``--`` command: its end is said on the message
    line, with its exit status. ``drill(settings, pid, screen) -> FrameSource`` counts a deeper
    top-down screen on one process for the ``t`` window (``tiptop.live.drill``).
    ``screen_number(screen)`` is the number the tasks line shows for a screen (a replay's:
    the one it had while recording); by default its place in ``screens``.
    ``where(pid)`` samples one process for the ``f`` window, whose first line is
    ``where_event`` (``tiptop.live.where``).
    """
    from tiptop.live.app import LiveApp

    app = LiveApp(
        options,
        source,
        screens,
        host=host,
        exporter=exporter,
        screen_index=screen_index,
        error_log=error_log,
        message=message,
        child=child,
        drill=drill,
        screen_number=screen_number,
        where=where,
        where_event=where_event,
    )
    return app.run(started=started)
