"""What the command line hands a live session besides its settings, source and screens:
one record, so that ``tiptop.live.run`` and the controller take it whole instead of
repeating a dozen parameters, and a new service is one field here and one line where the
command line builds it (``tiptop.cli.run``, ``tiptop.cli.replay``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Protocol

from tiptop.host import Host
from tiptop.options import Options
from tiptop.readonly import readonly

if TYPE_CHECKING:
    from tiptop.live.drill import Factory
    from tiptop.live.where import ProfilerFactory
    from tiptop.screens.model import ScreenSpec

#: ``exporter(options, screens) -> text`` writes the configuration file's text (cli
#: passes ``tiptop.screens``'s XML exporter; live may not import ``spec``).
Exporter = Callable[[Options, Sequence["ScreenSpec"]], str]


class Child(Protocol):
    """The ``--`` command as live mode sees it (``tiptop.spawn.Spawned``)."""

    def peek(self) -> int | None:
        """Its exit status once it has ended, else None (it is not reaped)."""
        ...


@readonly
class Services:
    """A live session's services and start-up facts, each optional."""

    #: What this machine allows (the title's ``[root]``, the ``K`` key); read at start
    #: when not given.
    host: Host | None = None
    #: ``W``'s configuration writer; ``None``: ``W`` says there is none.
    exporter: Exporter | None = None
    #: The index of the source's screen in the screens (the caller resolved ``-S``);
    #: found from ``source.screen`` when not given.
    screen_index: int | None = None
    #: The caller already started the source (the ``--`` spawn path).
    started: bool = False
    #: ``-E``: each new message is also written there as a ``tiptop: ...`` line.
    error_log: IO[str] | None = None
    #: What start-up had to say (the no-PMU fallback), on the status line at first.
    message: str = ""
    #: The ``--`` command: its end is said on the status line, with its exit status.
    child: Child | None = None
    #: ``drill(settings, pid, screen) -> FrameSource``: a deeper top-down screen counted
    #: on one process for the ``t`` window (``tiptop.live.drill``).
    drill: Factory | None = None
    #: The number the tasks line shows for a screen (a replay's: the one it had while
    #: recording); by default its place in the screens.
    screen_number: Callable[[ScreenSpec], int] | None = None
    #: ``where(pid, node, delay)`` samples one process for the ``f`` window, its buffers
    #: sized for the live delay (``tiptop.live.where``).
    where: ProfilerFactory | None = None
    #: The ``f`` window's first line where it is fixed (no PMU: ``cpu-clock``, and why).
    where_event: str = ""


__all__ = ["Child", "Exporter", "Services"]
