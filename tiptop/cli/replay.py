"""``--replay FILE``: a recording shown live (time travel keys)
or printed as batch text, csv or json, between ``--from`` and ``--to``."""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

from tiptop.cli.screens import ScreenSet, export_current
from tiptop.errors import TiptopError, UsageError
from tiptop.host import Host
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.frame import Frame
    from tiptop.outputs.records import RecordWriter
    from tiptop.outputs.why import WhyWriter
    from tiptop.recording.replay import ReplaySource

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\w*\s+ago\s*$")
_CLOCK = re.compile(r"^\s*(?:(\d{4})-(\d\d)-(\d\d)[ T])?(\d{1,2}):(\d\d)(?::(\d\d))?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_when(text: str, end: float) -> float:
    """``--from``/``--to``: ``10:32`` (the last such time at or before the recording's
    ``end``), ``2026-11-23 10:32:05``, or ``5m ago`` (s, m, h, d) counted from ``end``."""
    m = _AGO.match(text)
    if m:
        return end - float(m.group(1)) * _UNITS[m.group(2)]
    m = _CLOCK.match(text)
    if not m:
        raise UsageError(f"'{text}' is not a time (10:32, 2026-11-23 10:32:05 or '5m ago')")
    y, mo, d, hh, mm, ss = m.groups()
    if y is not None:
        parts = (int(y), int(mo), int(d), int(hh), int(mm), int(ss or 0), 0, 0, -1)
        return time.mktime(parts)
    day = time.localtime(end)
    when = time.mktime((*day[:3], int(hh), int(mm), int(ss or 0), 0, 0, -1))
    return when - 86400 if when > end + 0.5 else when


def frame_range(opts: Options, times: Sequence[float]) -> tuple[int, int]:
    """The frames ``--from``/``--to`` select (inclusive); one line when none is left."""
    import bisect

    if not times:
        return 0, -1
    end = times[-1]
    first, last = 0, len(times) - 1
    if opts.time_from:
        first = bisect.bisect_left(times, parse_when(opts.time_from, end) - 0.5)
    if opts.time_to:
        last = bisect.bisect_right(times, parse_when(opts.time_to, end) + 0.5) - 1
    if first > last:
        raise TiptopError("--from/--to: no recorded refresh in that time range")
    return first, last


def run_replay(opts: Options, loaded: ScreenSet, host: Host, say: Callable[[str], None]) -> int:
    """``--replay FILE``: live (time travel keys) or, with ``-b``/``-o``, batch output. The
    screens offered are the recording's; each refresh is shown under the one shown when it
    was recorded, unless ``-S`` picks one of them."""
    from tiptop.cli.run import is_live, open_output
    from tiptop.cli.screens import pick_screen
    from tiptop.recording.reader import load
    from tiptop.recording.replay import ReplaySource

    # Read in the background: the first refresh shows at once. --from/--to need every
    # refresh's time (a time is found from the end), so they wait for the whole file.
    rec = load(opts.replay, background=True)
    if opts.time_from or opts.time_to:
        rec.wait()
        first, last = frame_range(opts, rec.times)
        source_last: int | None = last
    else:
        first, source_last = 0, None
    screens = list(rec.screens)
    picked = None
    if opts.screen is not None:
        picked = pick_screen(screens, opts.screen)[1]
    opts = recorded_options(opts, rec.header)
    live = is_live(opts)
    if not live:
        opts = dataclasses.replace(opts, delay=rec.header.interval or opts.delay)
    source = ReplaySource(rec, picked, first=first, last=source_last, delay=opts.delay)
    if live:
        from tiptop import live as live_mode

        index = screens.index(source.screen) if source.screen in screens else 0
        return live_mode.run(
            opts, source, screens, host=host, screen_index=index, exporter=export_current
        )
    out = open_output(opts.output, "-o")
    try:
        return _batch(opts, source, rec.screens, out or sys.stdout, say)
    finally:
        source.close()
        if out is not None:
            out.close()


def recorded_options(opts: Options, head: Any) -> Options:
    """``opts`` with what the recording run watched (``cli.record``, checked by the
    reader) where the command line does not say otherwise: its PID width, idle rows, and
    the ``-p``/``-u`` filters."""
    kept = head.options
    given_only = opts.only_pid is not None or opts.only_name is not None
    return dataclasses.replace(
        opts,
        pid_width=head.pid_width or opts.pid_width,
        show_idle=opts.show_idle or bool(kept.get("show_idle")),
        only_pid=opts.only_pid if given_only else kept.get("only_pid"),
        only_name=opts.only_name if given_only else kept.get("only_name"),
        uid=opts.uid if opts.uid is not None else kept.get("uid"),
        user_name=opts.user_name if opts.uid is not None else kept.get("user_name"),
    )


def _batch(
    opts: Options,
    source: ReplaySource,
    screens: list[Any],
    out: IO[str],
    say: Callable[[str], None],
) -> int:
    """The recorded refreshes as batch output, as fast as they can be written, under the
    one consumer loop (``tiptop.refresh.consume``); a refresh shown under another screen
    than the one before gets that screen's name and header (text) or a new header line
    (csv). ``screens``: the recording's (it grows while the file is read)."""
    from tiptop.outputs.batch import TextWriter, make_writer
    from tiptop.refresh import consume

    rec = source.rec
    writer: TextWriter | RecordWriter | WhyWriter | None = None

    def take(frame: Frame, count: int) -> None:
        nonlocal writer
        screen = source.screen  # the screen of the frame just read
        if writer is None or screen is not writer.screen:
            # The first recorded screen by the number it had when recorded (its place in
            # the screens loaded then); the others by their place among the recorded ones.
            index = rec.header.screen_index if screen is screens[0] else screens.index(screen)
            if writer is None:
                writer = make_writer(out, opts, screen, index)
                writer.begin(rec.header.started or frame.timestamp)
            elif isinstance(writer, TextWriter):
                writer.switch(screen, index)
            else:  # csv, json: the new screen's columns from here on (csv: a header line)
                writer = make_writer(out, opts, screen, index)
                writer.begin(frame.timestamp)
        writer.frame(frame, count)

    consume(source.recorded(), take, source.messages, say, opts.max_iter)
    out.flush()
    return 0


__all__ = [
    "frame_range",
    "parse_when",
    "run_replay",
]
