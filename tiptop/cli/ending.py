"""How a batch run ends on a signal: the exit status the man page gives (SIGINT 130,
SIGTERM 143: 128 + the signal, the shell's convention), and, with ``-- CMD``, how long
tiptop waits for the command it passed SIGTERM on to.

tiptop forwards the request and waits for CMD, so that its exit status is CMD's; a CMD
that ignores SIGTERM would hold tiptop forever, so a second signal, or
:data:`COMMAND_GRACE` seconds, end tiptop at once and leave CMD to its own fate (it is
not killed: the user's second signal asked tiptop, not CMD, to go).
"""

from __future__ import annotations

import time
from types import FrameType
from typing import Protocol

#: Seconds tiptop waits for ``-- CMD`` after passing SIGTERM on (docs/tiptop.1).
COMMAND_GRACE = 5.0

#: How often the wait looks at the command (it ends the run only).
POLL_S = 0.05


class Stoppable(Protocol):
    """What a signal asks to end: ``tiptop.outputs.batch.Stop``."""

    def request(self) -> None: ...


class Command(Protocol):
    """The ``-- CMD`` child: ``tiptop.spawn.Spawned``."""

    def peek(self) -> int | None: ...

    def reap(self) -> int: ...


class Ending:
    """The SIGINT/SIGTERM handler of a batch run: it asks ``stop`` to end the loop and
    remembers the signal (the exit status) and how many came."""

    def __init__(self, stop: Stoppable) -> None:
        self.stop = stop
        self.signal: int | None = None
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signal = signum
        self.count += 1
        self.stop.request()

    def status(self) -> int:
        """128 + the last signal (130 for SIGINT, 143 for SIGTERM), 0 without one."""
        return 0 if self.signal is None else 128 + self.signal


def wait_for_command(child: Command, ending: Ending, grace: float = COMMAND_GRACE) -> int | None:
    """The command's exit status once it has ended, or None when a further signal came
    or ``grace`` seconds passed first (the command is then left running)."""
    seen = ending.count
    deadline = time.monotonic() + grace
    while child.peek() is None:
        if ending.count > seen or time.monotonic() >= deadline:
            return None
        time.sleep(POLL_S)
    return child.reap()
