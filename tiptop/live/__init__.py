"""Live mode: the interactive, top-like urwid screen (the original's ncurses mode).

``run(options, source, screens, services)`` is the whole public surface (``services``: a
``tiptop.live.services.Services`` record); ``cli.main`` calls it when stdout is a terminal
and ``-b`` is not given. The controller is ``app``, the keys ``registry``, the windows
``window`` and ``windows/`` (docs/architecture.md). Imports ``table``, ``frame``,
``options``, ``cells``, ``errors``, ``host``, ``refresh`` and ``where`` only (the frame
source is handed in).

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
from collections.abc import Sequence
from typing import TYPE_CHECKING

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
    from tiptop.live.services import Services
    from tiptop.options import Options
    from tiptop.screens.model import ScreenSpec


def run(
    options: Options,
    source: FrameSource,
    screens: Sequence[ScreenSpec],
    services: Services | None = None,
) -> int:
    """Show the live screen until ``q`` (0), Ctrl-C (130) or ``-n`` refreshes (0).

    Calls ``source.start()`` first (unless ``services.started``), then
    ``source.refresh()`` 0.2 s later and every ``options.delay`` seconds or at once on a
    key. ``screens`` are the ScreenSpecs the Left/Right keys rotate through; ``services``
    (:class:`tiptop.live.services.Services`) what the command line hands the session
    besides: the host, ``W``'s writer, ``-E``'s file, the ``--`` command, the ``t`` and
    ``f`` windows' factories, the start-up message.
    """
    from tiptop.live.app import LiveApp

    return LiveApp(options, source, screens, services).run()
