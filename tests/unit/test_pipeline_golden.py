"""The whole pipeline on the FAKE backend, pinned as golden text: the built-in ``default``
screen bound by the sampler, hardware-like counts scripted per task, a fake ``/proc``, and
the batch writer. Every number below follows from the script by hand arithmetic (see the
comments), so a change anywhere between the counters and the printed row shows up here."""

from __future__ import annotations

import io
from pathlib import Path

from tests.support.sampling import default_screen_sampler
from tiptop.options import Options
from tiptop.outputs.batch import TextWriter

# Over each 2 s interval (CLK_TCK 100, so 200 ticks = 100 % of one CPU):
#   compute: 1e9 cycles/s -> Mcycle 2000.00; 2e9 instr/s -> Minstr 4000.00, IPC 2.00;
#            1e6 misses/s -> %MISS 100*2e6/4e9 = 0.05; 4e6 mispredicts/s -> %BMIS 0.20;
#            bus-cycles fail with ENOENT on this "machine" -> '?' in %BUS.
#   server (2 threads, 50 + 30 ticks -> 40 %): 1e8 cycles/s per thread, 5e7 instr/s on the
#            main thread and 1.5e8 on the other: Mcycle 400.00, Minstr 400.00, IPC 1.00.
#   idle:    no ticks, no counts: %CPU 0.0 (shown with -i), 0/0 ratios -> '-'.
GOLDEN = """\
delay: 2.00  idle: 1  threads: 0
Screen 0: default

  PID  [%CPU] %SYS    P   Mcycle   Minstr   IPC  %MISS  %BMIS  %BUS COMMAND{trailing}
  100  100.0  10.0    1  2000.00  4000.00  2.00   0.05   0.20     ? compute
  300+  40.0   0.0    0   400.00   400.00  1.00   0.00   0.00     ? server
  400    0.0   0.0    0     0.00     0.00     -      -      -     ? idle

  100  100.0  10.0    1  2000.00  4000.00  2.00   0.05   0.20     ? compute
  300+  40.0   0.0    0   400.00   400.00  1.00   0.00   0.00     ? server
  400    0.0   0.0    0     0.00     0.00     -      -      -     ? idle

""".format(trailing=" ")  # the original's header ends with a space after COMMAND


def test_default_screen_through_sampler_and_batch(tmp_path: Path) -> None:
    fp, b, sampler = default_screen_sampler(tmp_path, (1e9, 2e9, 1e6, 4e6))
    default = sampler.screen
    opts = Options(delay=2.0, show_idle=True)
    out = io.StringIO()
    writer = TextWriter(out, opts, default, 0)
    writer.begin(0.0)
    sampler.start()
    ticks = {"compute": (0, 0), "server": (0, 0)}
    for it in range(2):
        b.clock.advance(2.0)
        u, s = ticks["compute"]
        ticks["compute"] = (u + 180, s + 20)
        fp.set_stat(100, "compute", utime=u + 180, stime=s + 20, processor=1)
        u, s = ticks["server"]
        ticks["server"] = (u + 80, s)
        fp.set_stat(300, "server", utime=u + 80, threads=2)
        fp.set_stat(300, "server", tid=300, utime=(u + 80) * 5 // 8, threads=2)
        fp.set_stat(300, "server", tid=301, utime=(u + 80) * 3 // 8, threads=2)
        frame = sampler.refresh()
        writer.frame(frame, it)
    # One line, once, for the event this "machine" lacks.
    enoent = [m for m in sampler.messages.lines() if "PMU" in m]
    assert len(enoent) == 1 and enoent[0].startswith("no hardware PMU"), sampler.messages.lines()
    sampler.close()
    text = out.getvalue().split("\n", 2)[2]  # drop uptime/load and date lines
    assert text == GOLDEN
