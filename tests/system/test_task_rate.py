"""%TASK (``100 * delta(TC) / 1e9 / INTERVAL``, the ``sched`` screen) of one busy thread
never reads over 100% of a CPU, even at ``-d 0.01`` on a loaded machine: ``INTERVAL`` is
each row's own counter window (``engine.assemble.row_facts``), never shorter than the
time the task was on a CPU in it. With the scan's interval instead, rows read in a pass
that came early or late read up to 143% here, 648% under load (issue 30)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

from tests.helpers import run

BUSY = "while True: pass"
#: The rows asked for (at -d 0.01, about 10 s when nothing is late).
ROWS = 1000
#: Percentage points above 100 a task-clock rate may read: float rounding alone. The
#: window is never less than the task-clock's own count (``engine.count.readout``
#: ``on_cpu_seconds``), which a read takes after time_enabled: with time_enabled alone, CI
#: read 100.93% once in 1000 rows, a vCPU stopped by its host between the two.
SLACK = 1e-6


def test_one_busy_thread_reads_at_most_100_percent_at_d_0_01_under_load() -> None:
    load = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        r = run(
            "-b",
            "-i",
            "--format",
            "csv",
            "-S",
            "sched",
            "-d",
            "0.01",
            "-n",
            str(ROWS),
            "-p",
            str(busy.pid),
            timeout=240,
        )
        assert r.returncode == 0, r.stderr
        rows = [x for x in csv.DictReader(io.StringIO(r.stdout)) if x["%TASK_status"] == "ok"]
        assert len(rows) >= ROWS - 5  # one row a refresh (its first ones may be new)
        task = sorted(float(x["%TASK"]) for x in rows)
        assert task[-1] <= 100.0 + SLACK, task[-10:]
        assert task[-1] > 50.0  # it ran whole windows: the test measures something
    finally:
        for p in (*load, busy):
            p.kill()
            p.wait()
