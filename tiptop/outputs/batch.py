"""Batch mode (``tiptop -b``): text compatible with the original, csv, and json lines
(written by ``tiptop.outputs.records``).

Text layout is docs/original.md section 6: a preamble, the header printed once, one row
per visible task, and an empty line after each iteration that printed rows; ``--timestamp``
(``%6d ``) and ``--epoch`` (``%10u ``) prefixes; `` DEAD`` and `` <---`` suffixes.

Unlike the original, no primer iteration is printed: the sampler's ``start()`` only takes
baselines, and the first printed iteration comes one full ``delay`` later, so every printed
row covers a real interval of the same length (the original printed a row of near-zero
deltas, then a 200 ms interval; scripts had to throw both away).

Output is flushed after every iteration. A closed pipe (``tiptop -b | head``) ends the run
quietly with status 0; any other write error is a :class:`TiptopError` (one line).
Imports only ``table``, ``frame``, ``options``, ``cells``, ``errors`` and ``refresh`` (the
one consumer loop, which drains the message log); the frame source
(``tiptop.frame.FrameSource``) and screen are passed in.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Protocol, TypeVar

from tiptop.choices import Format
from tiptop.errors import TiptopError
from tiptop.frame import Frame, FrameSource
from tiptop.options import Options
from tiptop.outside import printable
from tiptop.refresh import Item, Made, Refreshing, Stop, consume, paced
from tiptop.table import View, header, text_lines
from tiptop.table.text import LineMemo

if TYPE_CHECKING:
    from tiptop.messages import MessageLog
    from tiptop.outputs.records import RecordWriter
    from tiptop.outputs.why import WhyWriter
    from tiptop.screens.model import ScreenSpec
    from tiptop.spawn import Spawned

#: What a writer takes (contravariant: a writer of frames takes frames).
Taken = TypeVar("Taken", contravariant=True)

# --------------------------------------------------------------------------- text


def preamble(options: Options, screen_index: int, screen_name: str, now: float) -> list[str]:
    """The lines printed once before the header (docs/original.md 6.1), not the header.
    Uptime and load are what the original took from sysinfo(2): the boot-time clock
    (``CLOCK_BOOTTIME``, clock_gettime(2), sysinfo's uptime) and getloadavg(3)
    (/proc/loadavg, proc(5))."""
    up = int(time.clock_gettime(time.CLOCK_BOOTTIME))
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    lines = [
        f"tiptop - up {up // 86400} days, {up % 86400 // 3600}:{up % 3600 // 60:02d}, "
        f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}",
        time.strftime("%a %b %e %H:%M:%S %Z %Y", time.localtime(now)),
        f"delay: {options.delay:.2f}  idle: {int(options.show_idle)}  "
        f"threads: {int(options.show_threads)}",
    ]
    if options.watch_pid is not None:
        lines.append(f"watching pid {options.watch_pid}")
    elif options.watch_name is not None:
        lines.append(f"watching pid '{options.watch_name}'")
    if options.only_pid is not None:
        lines.append(f"only pid {options.only_pid}")
    elif options.only_name is not None:
        lines.append(f"only pid '{options.only_name}'")
    if options.uid is not None:
        lines.append(f"watching uid {options.uid} '{options.user_name}'")
    lines.append(f"Screen {screen_index}: {screen_name}")
    lines.append("")
    return lines


class TextWriter:
    """The original's batch text."""

    def __init__(
        self, out: IO[str], options: Options, screen: ScreenSpec, screen_index: int
    ) -> None:
        self.out = out
        self.options = options
        self.screen = screen
        self.screen_index = screen_index
        self.view: View = options.view()
        self._lines = LineMemo()  # the last iteration's lines, for text_lines

    def begin(self, now: float) -> None:
        """Preamble and the header line (printed once, never repeated)."""
        lines = preamble(self.options, self.screen_index, self.screen.name, now)
        lines.append(self._header())
        # A -p/-w name or a screen's text with ESC in it is shown, never obeyed.
        self.out.write("\n".join(map(printable, lines)) + "\n")

    def switch(self, screen: ScreenSpec, screen_index: int) -> None:
        """Go on under another screen (a replayed screen switch): its name and header."""
        self.screen, self.screen_index = screen, screen_index
        self._lines = LineMemo()
        lines = [f"Screen {screen_index}: {screen.name}", self._header()]
        self.out.write("\n".join(map(printable, lines)) + "\n")

    def _header(self) -> str:
        prefix = ("timest " if self.options.show_timestamp else "") + (
            "     epoch " if self.options.show_epoch else ""
        )
        return prefix + header(self.screen, self.view)

    def frame(self, frame: Frame, iteration: int) -> int:
        """Write one iteration; returns the number of rows written."""
        prefix = ""
        if self.options.show_timestamp:
            prefix += f"{iteration:6d} "
        if self.options.show_epoch:
            prefix += f"{int(frame.timestamp):10d} "
        out = text_lines(frame, self.screen, self.view, self._lines)
        if prefix:
            out = [prefix + line for line in out]
        if out:
            self.out.write("\n".join(out) + "\n\n")
        return len(out)


def make_writer(
    out: IO[str], options: Options, screen: ScreenSpec, screen_index: int
) -> TextWriter | RecordWriter | WhyWriter:
    """The writer for ``options.format`` (``--why``: the task's tree in that format).

    The csv/json and ``--why`` writers are imported here, when asked for: with ``csv``,
    ``json`` and the top-down tree they are a few ms of every start that prints text
    (benchmarks/README.md, "Start-up")."""
    if options.why is not None:
        from tiptop.outputs.why import WhyWriter

        return WhyWriter(out, options, screen, options.why_note)
    if options.format is Format.TEXT:
        return TextWriter(out, options, screen, screen_index)
    from tiptop.outputs.records import RecordWriter

    return RecordWriter(out, options, screen, screen_index, options.format)


# --------------------------------------------------------------------------- loop


def reader_gone(fd: int) -> bool:
    """True when ``fd`` is a pipe whose reading end is closed (poll(2) reports POLLERR on
    the write end of a pipe with no readers), so an idle run notices ``| head`` early."""
    try:
        p = select.poll()
        p.register(fd, select.POLLERR)
        return any(ev & _GONE for _, ev in p.poll(0))
    except (OSError, ValueError):
        return False


#: poll(2) events that say an output's reader is gone (always reported, whatever asked).
_GONE = select.POLLERR | select.POLLHUP


def _wait_until(deadline: float, stop: Stop, out_fd: int | None, child: Ends | None) -> None:
    """Sleep until ``deadline`` (monotonic) in one poll(2), returning early when a stop is
    requested (its pipe), the output reader went away (BrokenPipeError), or the spawned
    child exited (looked at every 20 ms: it has no fd to wait on). Not a wake-up every few
    ms to look: that costs CPU at any ``-d``, more than the refreshes of a long delay."""
    poller = select.poll()
    poller.register(stop.fileno(), select.POLLIN)
    if out_fd is not None:
        poller.register(out_fd, 0)  # errors only
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or stop.requested:
            return
        if child is not None and child.exited():
            return
        for fd, ev in poller.poll(1000 * (left if child is None else min(left, 0.02))):
            if fd == out_fd and ev & _GONE:
                raise BrokenPipeError
            if fd == out_fd:  # POLLNVAL: not a file to poll; writes will say what it is
                poller.unregister(out_fd)


def run(
    options: Options,
    source: FrameSource,
    screen: ScreenSpec,
    screen_index: int,
    out: IO[str],
    err: IO[str],
    *,
    started: bool = False,
    stop: Stop | None = None,
    child: Spawned | None = None,
) -> int:
    """Run the batch loop until ``-n`` iterations, a stop request, or the end of the
    spawned ``child`` (whose last interval is printed). Returns 0; a closed pipe also
    returns 0. The source's messages go to ``err`` as they appear, one line each, while the
    output still has a reader (after ``| head`` has gone they would explain nothing)."""
    writer = make_writer(out, options, screen, screen_index)
    return drive(source, writer, options, out, err, started=started, stop=stop, child=child)


class Source(Refreshing[Made], Protocol[Made]):
    """What :func:`drive` reads: a frame source, or ``--where``'s profiler."""

    messages: MessageLog

    def start(self) -> None:
        """Take baselines; the first refresh covers a real interval."""
        ...


class Writer(Protocol[Taken]):
    """What :func:`drive` writes with: a first line or preamble, then each refresh."""

    def begin(self, now: float) -> None:
        """Write what comes before the first refresh."""
        ...

    def frame(self, item: Taken, iteration: int) -> int:
        """Write one refresh; returns the lines written."""
        ...


class Ends(Protocol):
    """What is watched, which may end: a spawned command, ``--where``'s process."""

    def exited(self) -> bool:
        """Whether it ended (the refresh after that is the last)."""
        ...


def drive(
    source: Source[Item],
    writer: Writer[Item],
    options: Options,
    out: IO[str],
    err: IO[str],
    *,
    started: bool = False,
    stop: Stop | None = None,
    child: Ends | None = None,
) -> int:
    """The batch loop of :func:`run` with its ``writer``: each refresh of ``source``
    written, every ``options.delay``, until ``-n``, a stop, or the end of ``child``."""
    try:
        out_fd: int | None = out.fileno()
    except (OSError, AttributeError, ValueError):
        out_fd = None
    own_stop = stop is None
    stop = stop or Stop()

    def take(item: Item, iteration: int) -> None:
        with _writing():
            writer.frame(item, iteration)
            out.flush()

    def say(line: str) -> None:
        if out_fd is not None and reader_gone(out_fd):
            raise BrokenPipeError  # nobody reads the output this line would explain
        err.write(f"tiptop: {printable(line)}\n")
        err.flush()

    try:
        with _writing():
            writer.begin(time.time())
            out.flush()
        if not started:
            source.start()
        frames = _frames(source, options.delay, stop, out_fd, child)
        consume(frames, take, source.messages, say, options.max_iter)
        with _writing():
            out.flush()
    except BrokenPipeError:
        _silence_stdout(out_fd)
        return 0
    finally:
        if own_stop:
            stop.close()
    return 0


def _frames(
    source: Refreshing[Item], delay: float, stop: Stop, out_fd: int | None, child: Ends | None
) -> Iterator[Item]:
    """The source's frames every ``delay`` (:func:`tiptop.refresh.paced`), the wait also
    ended by a reader gone or the spawned ``child``'s end, whose last interval is then
    the last frame."""
    return paced(
        source,
        delay,
        stop,
        wait=lambda deadline: _wait_until(deadline, stop, out_fd, child),
        ending=None if child is None else child.exited,
    )


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """Turn a write error other than EPIPE (ENOSPC, EIO, a closed file) into one line."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise TiptopError(f"cannot write output: {reason}") from None
    except ValueError as exc:  # write to a closed file object
        raise TiptopError(f"cannot write output: {exc}") from None


def _silence_stdout(fd: int | None) -> None:
    """After EPIPE, point the fd at /dev/null so the interpreter's final flush of the
    buffered stream cannot raise again (Python docs, "Note on SIGPIPE")."""
    if fd is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
