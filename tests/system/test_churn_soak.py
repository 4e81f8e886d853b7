"""A bounded churn soak (about 15 s): a process that keeps creating threads that exit at
once, and short-lived processes beside it. Every task that lived more than two refreshes
has readable counters in every row, tiptop's fd count stays flat, and the batch run ends
without a traceback (issue: a process uncounted for life when its threads race the attach)."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
import time

from tests.helpers import TIPTOP
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.screens import builtin_screens
from tiptop.screens.model import Target

CHURNER = textwrap.dedent(
    """
    import os, sys, threading, time
    print("ready", flush=True)
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        ts = [threading.Thread(target=lambda: None) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        time.sleep(0.0005)
    """
)


def start_churner(seconds: float) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", CHURNER, str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def sched() -> object:
    (s,) = [s for s in builtin_screens(Target()) if s.name == "sched"]
    return s


def test_thread_churn_never_leaves_a_process_uncounted() -> None:
    churner = start_churner(8.0)
    shorts: list[subprocess.Popen[bytes]] = []
    s = Sampler(sched(), SamplerConfig(only_pid=churner.pid))  # type: ignore[arg-type]
    fds = []
    try:
        s.start()
        for k in range(25):
            shorts += [subprocess.Popen(["sleep", "0.05"]) for _ in range(3)]
            time.sleep(0.2)
            f = s.refresh()
            fds.append(len(os.listdir("/proc/self/fd")))
            if k >= 2 and len(f):  # lived more than two refreshes
                i = list(f.tid).index(churner.pid)
                tc = f.counters.index("TC")
                assert f.counter_status[i, tc] == Status.OK, (k, s.messages.lines())
        for p in shorts:
            p.wait()
        assert max(fds[5:]) - min(fds[5:]) <= 4, fds  # flat: nothing leaks per refresh
        assert not any("not supported" in m for m in s.messages.lines()), s.messages.lines()
    finally:
        s.close()
        churner.kill()
        churner.wait()


def test_batch_csv_under_churn_has_every_row_readable() -> None:
    churner = start_churner(8.0)
    try:
        r = subprocess.run(
            [
                *TIPTOP,
                "-b",
                "-i",  # every refresh has its row, ran or not (a busy machine skips some)
                "--format",
                "csv",
                "-S",
                "sched",
                "-p",
                str(churner.pid),
                "-d",
                "0.2",
                "-n",
                "20",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/tmp",
            stdin=subprocess.DEVNULL,
        )
    finally:
        churner.kill()
        churner.wait()
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) >= 18, r.stdout[-2000:]
    unreadable = [row["iteration"] for row in rows if row["TC_delta"] == ""]
    assert unreadable == [], (unreadable, r.stderr)
