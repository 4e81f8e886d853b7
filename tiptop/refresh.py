"""The one loop that hands frames to a consumer: batch output, a recording's batch replay and
the exporter all run under :func:`consume`, and it alone drains the source's message log
(one line per new message, after each frame), so every consumer says the same messages at
the same moment.

What differs between consumers is where frames come from and what is done with each: a
live source refreshed every ``delay`` seconds (:func:`paced`), or a recording read as fast
as it can be written; written as text, csv or json, or published as metrics. Waiting is
one poll(2) that a stop request (:class:`Stop`, safe in a signal handler) ends at once.
Live mode keeps its own loop: urwid's main loop drives its refreshes between keys.

Imports only ``messages``: what is handed on is the caller's type (a ``Frame``, or
``--where``'s profile of one process).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Protocol, TypeVar

from tiptop.messages import MessageLog

#: What a loop hands on: a :class:`tiptop.frame.Frame`, or ``--where``'s profile.
Item = TypeVar("Item")
Made = TypeVar("Made", covariant=True)


class Refreshing(Protocol[Made]):
    """A source of what one refresh made: a ``FrameSource``, ``--where``'s profiler."""

    def refresh(self) -> Made:
        """What the time since the previous refresh made."""
        ...


#: A signal handler, as ``signal.signal`` takes it.
Handler = Callable[[int, FrameType | None], object]


class Stop:
    """Why a loop should end early: a signal (the caller's handlers call :meth:`request`),
    a reader gone, an exporter told to stop. A wait in progress is woken through a pipe
    (:meth:`fileno`): a signal handler runs while poll(2) is interrupted, and Python then
    polls again for the time left (PEP 475), so the flag alone would be seen only at the
    wait's end."""

    def __init__(self) -> None:
        self.requested = False
        self._wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def request(self) -> None:
        """Ask the loop to end, waking a wait in progress (safe in a signal handler and
        from another thread)."""
        self.requested = True
        with contextlib.suppress(OSError):  # closed, or a byte already waiting
            os.write(self._wake[1], b"\0")

    def fileno(self) -> int:
        """Readable once a stop was requested."""
        return self._wake[0]

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, woken by a stop request; True when one was made."""
        if not self.requested and seconds > 0:
            with contextlib.suppress(OSError, ValueError):  # closed: nothing to wait on
                poller = select.poll()
                poller.register(self.fileno(), select.POLLIN)
                poller.poll(1000 * seconds)
        return self.requested

    @contextlib.contextmanager
    def on_signals(self, handler: Handler | None = None) -> Iterator[Stop]:
        """While in the block, SIGINT and SIGTERM request this stop, or go to ``handler``
        (which should request it, e.g. after noting the signal for the exit status); the
        handlers before are put back after it."""
        handle: Handler = handler or (lambda *_: self.request())
        old = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, previous in old.items():
                signal.signal(sig, previous)

    def close(self) -> None:
        """Close the wake pipe (once)."""
        for fd in self._wake:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake = (-1, -1)


#: ``wait(deadline)``: sleep until the monotonic ``deadline`` or a reason to wake.
Wait = Callable[[float], None]


def paced(
    source: Refreshing[Item],
    delay: float,
    stop: Stop,
    wait: Wait | None = None,
    ending: Callable[[], bool] | None = None,
) -> Iterator[Item]:
    """``source``'s frames, one every ``delay`` seconds from now, until ``stop`` is
    requested; deadlines are kept from the start (a slow refresh does not push the next
    one later). ``wait`` sleeps until a deadline (default: :meth:`Stop.wait`). ``ending()``,
    asked before each refresh, says that what is watched has ended (a spawned command
    exited): that refresh, which covers its last interval, is the last frame."""
    deadline = time.monotonic()
    while True:
        deadline += delay
        if wait is None:
            stop.wait(deadline - time.monotonic())
        else:
            wait(deadline)
        if stop.requested:
            return
        last = ending is not None and ending()
        yield source.refresh()
        if last:
            return


def drain(messages: MessageLog, cursor: int, say: Callable[[str], None]) -> int:
    """Say each message of ``messages`` after ``cursor``, one line each; the new cursor."""
    fresh, cursor = messages.since(cursor)
    for m in fresh:
        say(m.line)
    return cursor


def consume(
    frames: Iterable[Item],
    take: Callable[[Item, int], None],
    messages: MessageLog,
    say: Callable[[str], None],
    max_iter: int = 0,
) -> int:
    """Hand each of ``frames`` to ``take(frame, count)`` until they end or ``max_iter``
    (0: no limit) were taken, saying the source's new ``messages`` before the first frame
    and after each; returns how many were taken."""
    cursor = drain(messages, 0, say)
    count = 0
    it = iter(frames)
    while not max_iter or count < max_iter:
        frame = next(it, None)
        if frame is None:
            break
        take(frame, count)
        count += 1
        cursor = drain(messages, cursor, say)
    drain(messages, cursor, say)
    return count


__all__ = ["Item", "Made", "Refreshing", "Stop", "Wait", "consume", "drain", "paced"]
