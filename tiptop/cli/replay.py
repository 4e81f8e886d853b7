"""``--replay FILE``: a recording shown live (time travel keys)
or printed as batch text, csv or json, between ``--from`` and ``--to``."""

from __future__ import annotations

import bisect
import dataclasses
import datetime
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

from tiptop.choices import SeriesBy
from tiptop.cli.screens import ScreenSet, export_current
from tiptop.errors import TiptopError, UsageError
from tiptop.host import Host
from tiptop.options import Options
from tiptop.outside import printable, shown
from tiptop.recording.index import Recording
from tiptop.screens.model import ScreenSpec

if TYPE_CHECKING:
    from tiptop.frame import Frame, FrameSource
    from tiptop.outputs.records import RecordWriter
    from tiptop.outputs.why import WhyWriter
    from tiptop.recording.format import Header
    from tiptop.recording.replay import ReplaySource
    from tiptop.screens.model import ScreenSpec
    from tiptop.sources.bycgroup import CgroupSource

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\w*\s+ago\s*$")
_CLOCK = re.compile(r"^\s*(?:(\d{4})-(\d\d)-(\d\d)[ T])?(\d{1,2}):(\d\d)(?::(\d\d))?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_when(text: str, start: float, end: float, last: bool = False) -> float:
    """``--from``/``--to`` on a recording from ``start`` to ``end``: ``2026-11-23 10:32:05``,
    ``5m ago`` (s, m, h, d) counted from ``end``, or ``10:32`` alone: that time on one of
    the recording's own days, the first at or after its start (``last``: the last at or
    before its end; ``--to``), else the one of its only day (before or after it)."""
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

    def on(day: datetime.date) -> float:
        return time.mktime((day.year, day.month, day.day, int(hh), int(mm), int(ss or 0), 0, 0, -1))

    one_day = datetime.timedelta(days=1)
    if last:  # the last at or before the end: on the end's day, else the day before
        when = on(datetime.date.fromtimestamp(end))
        before = on(datetime.date.fromtimestamp(end) - one_day)
        return before if when > end + 0.5 and before >= start - 0.5 else when
    when = on(datetime.date.fromtimestamp(start))  # the first at or after the start
    after = on(datetime.date.fromtimestamp(start) + one_day)
    return after if when < start - 0.5 and after <= end + 0.5 else when


def frame_range(opts: Options, times: Sequence[float]) -> tuple[int, int]:
    """The frames ``--from``/``--to`` select (inclusive); one line saying the recording's
    span (TiptopError: exit status 1) when none is in that range."""
    if not times:
        return 0, -1
    start, end = times[0], times[-1]
    first, last = 0, len(times) - 1
    low = high = None
    if opts.time_from:
        low = parse_when(opts.time_from, start, end)
        first = bisect.bisect_left(times, low - 0.5)
    if opts.time_to:
        high = parse_when(opts.time_to, start, end, last=True)
        last = bisect.bisect_right(times, high + 0.5) - 1
    if first > last:
        asked = f"{_when(low) if low is not None else 'its start'} to " + (
            _when(high) if high is not None else "its end"
        )
        raise TiptopError(
            f"--from/--to: no recorded refresh from {asked}; "
            f"the recording spans {_when(start)} to {_when(end)}"
        )
    return first, last


def _when(t: float) -> str:
    """A time as the messages say it: ``2026-11-23 10:32:05`` (local time)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def pick_recorded(rec: Recording, wanted: str, flag: str = "-S") -> ScreenSpec:
    """``-S`` on a recording: a screen by the number it had while recording (the number
    a replay shows), else by a part of its name; one line listing the recording's screens
    when none is."""
    screen = rec.screen_numbered(wanted)
    if screen is None:
        raise UsageError(
            f"{flag} {shown(wanted)}: no such screen in the recording "
            f"(its screens: {rec.screen_list()})"
        )
    return screen


def run_replay(
    opts: Options,
    loaded: ScreenSet,
    host: Host,
    say: Callable[[str], None],
    *,
    paced: bool = True,
) -> int:
    """``--replay FILE``: live (time travel keys) or, with ``-b``/``-o``, batch output. The
    screens offered are the recording's; each refresh is shown under the one shown when it
    was recorded, unless ``-S`` picks one of them. Live, each refresh is shown as long as
    it was while recording (``paced``), else every ``opts.delay`` seconds (``-d``)."""
    from tiptop.cli.run import open_output
    from tiptop.recording.reader import load
    from tiptop.recording.replay import ReplaySource

    # Read in the background: the first refresh shows at once. --from/--to need every
    # refresh's time (a time is found from the end), so they wait for the whole file.
    path = opts.replay
    assert path is not None  # run for --replay FILE only (tiptop.cli._main)
    rec = load(path, background=True)
    if opts.time_from or opts.time_to:
        rec.wait()
        first, last = frame_range(opts, rec.times)
        source_last: int | None = last
    else:
        first, source_last = 0, None
    screens = list(rec.screens)
    picked = None if opts.screen is None else pick_recorded(rec, opts.screen)
    opts = recorded_options(opts, rec.header)
    live = opts.live
    if not live:
        opts = dataclasses.replace(opts, delay=rec.header.interval or opts.delay)
    delay = None if paced and live else opts.delay
    by_cgroup = _by_cgroup(opts, rec)
    source = ReplaySource(rec, picked, first=first, last=source_last, delay=delay)
    if live:
        from tiptop import live as live_mode
        from tiptop.live.services import Services

        index = screens.index(source.screen) if source.screen in screens else 0
        services = Services(
            host=host, exporter=export_current, screen_index=index, screen_number=rec.number_of
        )
        shown = source if by_cgroup is None else by_cgroup(source)
        return live_mode.run(opts, shown, screens, services)
    out = open_output(opts.output, "-o")
    try:
        grouped = None if by_cgroup is None else by_cgroup(source).grouped
        return _batch(opts, source, out or sys.stdout, say, grouped)
    finally:
        source.close()
        if out is not None:
            out.close()


def _by_cgroup(opts: Options, rec: Recording) -> Callable[[FrameSource], CgroupSource] | None:
    """What makes rows by cgroup of a replay (``--by cgroup``, the live ``G`` key): who ran
    in each task's cgroup, as recorded (live, ``--by cgroup``); None for a recording that
    holds none, which ``--by cgroup`` refuses in one line."""
    from tiptop.sources.bycgroup import CgroupSource

    if rec.header.options.cgroups:
        return lambda source: CgroupSource(source, opts.series_by is SeriesBy.CGROUP)
    if opts.series_by is SeriesBy.CGROUP:
        raise TiptopError(
            f"--by cgroup: '{printable(rec.path)}' holds no cgroups: it was recorded in batch "
            "mode without --by cgroup (or by an older tiptop)"
        )
    return None


def recorded_options(opts: Options, head: Header) -> Options:
    """``opts`` with what the recording run watched (``cli.record``, checked by the
    reader) where the command line does not say otherwise: its PID width, idle rows, and
    the ``-p``/``-u`` filters."""
    kept = head.options
    given_only = opts.only_pid is not None or opts.only_name is not None
    return dataclasses.replace(
        opts,
        pid_width=head.pid_width or opts.pid_width,
        show_idle=opts.show_idle or kept.show_idle,
        only_pid=opts.only_pid if given_only else kept.only_pid,
        only_name=opts.only_name if given_only else kept.only_name,
        uid=opts.uid if opts.uid is not None else kept.uid,
        user_name=opts.user_name if opts.uid is not None else kept.user_name,
    )


def _batch(
    opts: Options,
    source: ReplaySource,
    out: IO[str],
    say: Callable[[str], None],
    grouped: Callable[[Frame], Frame] | None = None,
) -> int:
    """The recorded refreshes as batch output, as fast as they can be written, under the
    one consumer loop (``tiptop.refresh.consume``), each ``grouped`` (``--by cgroup``)
    when given; a refresh shown under another screen than the one before gets that
    screen's name (by the number it had while recording) and header (text) or a new header
    line (csv)."""
    from tiptop.outputs.batch import TextWriter, make_writer
    from tiptop.refresh import consume

    rec = source.rec
    writer: TextWriter | RecordWriter | WhyWriter | None = None

    def take(frame: Frame, count: int) -> None:
        nonlocal writer
        screen = source.screen  # the screen of the frame just read
        if writer is None or screen is not writer.screen:
            index = rec.number_of(screen)  # the number it had while recording
            if writer is None:
                writer = make_writer(out, opts, screen, index)
                writer.begin(rec.header.started or frame.timestamp)
            elif isinstance(writer, TextWriter):
                writer.switch(screen, index)
            else:  # csv, json: the new screen's columns from here on (csv: a header line)
                writer = make_writer(out, opts, screen, index)
                writer.begin(frame.timestamp)
        writer.frame(frame, count)

    frames = source.recorded() if grouped is None else map(grouped, source.recorded())
    consume(frames, take, source.messages, say, opts.max_iter)
    out.flush()
    return 0


__all__ = [
    "frame_range",
    "parse_when",
    "pick_recorded",
    "run_replay",
]
