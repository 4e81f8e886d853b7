"""A process moved to another cgroup while watched is counted in its new one from the
refresh after it next runs (``tiptop.kernel.cgroup.CgroupCache``): ``systemd-run``,
``cgexec`` and batch schedulers move a child between its fork and its exec, and an admin
may write a PID into another cgroup's ``cgroup.procs`` (cgroup-v2.rst, "Processes").
Real cgroups made in the v2 hierarchy; needs root."""

from __future__ import annotations

import subprocess
import sys
import threading

from tests.helpers import TIPTOP, removed
from tests.system.test_exporter_cgroup import made_cgroup

#: The refresh delay, and the rows read after the move: the move is found at the refresh
#: after it (the loop runs throughout), so the last two are the second cgroup's.
DELAY, ROWS_AFTER = 0.4, 4


def test_rows_by_cgroup_follow_a_process_moved_to_another_cgroup() -> None:
    first, second = made_cgroup("tt71mvA"), made_cgroup("tt71mvB")
    labels = (first.name, second.name)
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    run = None
    shown: list[str] = []
    try:
        (first / "cgroup.procs").write_text(str(loop.pid))
        run = subprocess.Popen(
            [*TIPTOP, "-b", "--by", "cgroup", "-S", "state", "-d", str(DELAY)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert run.stdout is not None
        deadline = threading.Timer(60, run.kill)  # a hung run fails, never blocks the suite
        deadline.start()
        for line in run.stdout:  # one row per refresh for the loop's cgroup
            if line.rstrip().endswith(labels):
                shown.append(line.split()[-1])
                if len(shown) == 1:  # the first row, in the first cgroup: now move it
                    (second / "cgroup.procs").write_text(str(loop.pid))
                if len(shown) == 1 + ROWS_AFTER:
                    break
        deadline.cancel()
    finally:
        if run is not None:
            run.kill()
            run.wait()
        loop.kill()
        loop.wait()
        removed(first, second)
    assert len(shown) == 1 + ROWS_AFTER and shown[0] == first.name, shown
    assert shown[-2:] == [second.name, second.name], shown
