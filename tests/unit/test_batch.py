"""Batch mode without a terminal or a kernel sampler: where messages go once the reader
has left, and the preamble's uptime and load (this machine's /proc)."""

from __future__ import annotations

import io
import os
import re
import time

from tests.support.builders import StubSource, screen
from tiptop.frame import Frame
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.outputs import batch


def test_messages_are_dropped_once_the_reader_is_gone() -> None:
    """A reader that leaves while the sampler starts (``| head`` read the preamble and
    exited): the run ends with status 0 and the sampler's diagnostics are not printed,
    since nobody reads the output they explain."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as out:
        err = io.StringIO()
        sampler = _TalkingSampler(read_end)
        opts = Options(batch=True, max_iter=3, delay=0.01)
        code = batch.run(opts, sampler, sampler.screen, 0, out, err)
    assert code == 0
    assert sampler.started and sampler.refreshes == 0
    assert err.getvalue() == ""


class _TalkingSampler(StubSource):
    """A stand-in sampler with one problem to report, whose ``start`` closes the pipe's
    reading end (hardware counts are not needed to test where its messages go)."""

    def __init__(self, reader: int) -> None:
        self.screen = screen("s", columns=[(" %CPU", "%5.1f", "CPU_TOT")])
        self.messages = MessageLog()
        self.messages.say("enoent", "bus-cycles: ENOENT: not supported here")
        self.reader = reader
        self.started = False
        self.refreshes = 0

    def start(self) -> None:
        self.started = True
        os.close(self.reader)

    def refresh(self) -> Frame:
        self.refreshes += 1
        return Frame.empty((" %CPU",))


def test_preamble_uptime_and_load_are_this_machines() -> None:
    """The first preamble line: uptime (the boot-time clock) agrees with /proc/uptime to the
    minute, and the load averages are /proc/loadavg's (both kernel figures, proc(5))."""

    def loadavg() -> list[float]:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]

    before = loadavg()
    line = batch.preamble(Options(), 0, "default", time.time())[0]
    after = loadavg()
    m = re.fullmatch(
        r"tiptop - up (\d+) days, (\d+):(\d\d), load average: ([\d.]+), ([\d.]+), ([\d.]+)",
        line,
    )
    assert m, line
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    shown = int(m[1]) * 86400 + int(m[2]) * 3600 + int(m[3]) * 60
    # The preamble shows whole minutes of CLOCK_BOOTTIME, which /proc/uptime reads too
    # (fs/proc/uptime.c), a moment later.
    assert shown <= up < shown + 60 + 1, (line, up)
    # The kernel updates the averages every 5 s: one update may fall between the reads.
    for got, b, a in zip((m[4], m[5], m[6]), before, after, strict=True):
        assert min(a, b) - 0.01 <= float(got) <= max(a, b) + 0.01, (line, before, after)
