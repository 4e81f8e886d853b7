"""``--replay FILE``: a recording shown live (time travel keys)
or printed as batch text, csv or json, between ``--from`` and ``--to``."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from tiptop.cli.screens import ScreenSet, export_current
from tiptop.errors import TiptopError, UsageError
from tiptop.host import Host

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


def frame_range(opts: Any, times: Sequence[float]) -> tuple[int, int]:
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


def replay_screens(loaded: ScreenSet, rec: Any) -> tuple[list[Any], int]:
    """The screens to show: the loaded ones with the recorded screen in its recorded place
    (or first when it is not among them), and the recorded screen's index."""
    recorded = rec.screens[0]
    screens = list(loaded.screens)
    index = int(rec.header.get("screen_index", 0))
    if 0 <= index < len(screens) and screens[index].name == recorded.name:
        screens[index] = recorded
        return screens, index
    return [recorded, *screens], 0


def run_replay(opts: Any, loaded: ScreenSet, host: Host, say: Callable[[str], None]) -> int:
    """``--replay FILE``: live (time travel keys) or, with ``-b``/``-o``, batch output."""
    from tiptop.cli.run import is_live, open_output
    from tiptop.cli.screens import pick_screen
    from tiptop.recording.replay import ReplaySource, load
    from tiptop.screens.printf import check_formats

    rec = load(opts.replay)
    first, last = frame_range(opts, rec.times)
    screens, index = replay_screens(loaded, rec)
    if opts.screen is not None:
        index, _ = pick_screen(screens, opts.screen)
    screen = screens[index]
    check_formats(screen)
    opts.pid_width = int(rec.header.get("pid_width", opts.pid_width))
    kept = rec.header.get("options", {})  # what the recording run watched (cli.record)
    opts.show_idle = opts.show_idle or bool(kept.get("show_idle"))
    if opts.only_pid is None and opts.only_name is None:
        opts.only_pid, opts.only_name = kept.get("only_pid"), kept.get("only_name")
    if opts.uid is None:
        opts.uid, opts.user_name = kept.get("uid"), kept.get("user_name")
    live = is_live(opts)
    if not live:
        opts.delay = float(rec.header.get("interval", opts.delay))
    source = ReplaySource(rec, screen, first=first, last=last, delay=opts.delay)
    if live:
        from tiptop import live as live_mode

        return live_mode.run(
            opts, source, screens, host=host, screen_index=index, exporter=export_current
        )
    out = open_output(opts.output, "-o")
    try:
        return _batch(opts, source, screen, index, out or sys.stdout, say)
    finally:
        if out is not None:
            out.close()


def _batch(opts: Any, source: Any, screen: Any, index: int, out: Any, say: Any) -> int:
    """The recorded refreshes as batch output, as fast as they can be written."""
    from tiptop.outputs.batch import make_writer

    for m in source.messages.since(0)[0]:
        say(m.line)
    writer = make_writer(out, opts, screen, index)
    rec = source.rec
    writer.begin(float(rec.header.get("started", rec.times[0] if rec.times else 0.0)))
    for count, i in enumerate(range(source.first, source.last + 1)):
        if opts.max_iter and count >= opts.max_iter:
            break
        writer.frame(source.frame(i), count)
    out.flush()
    return 0


__all__ = [
    "frame_range", "parse_when", "run_replay",
]  # fmt: skip
