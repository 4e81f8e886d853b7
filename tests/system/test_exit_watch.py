"""engine.count.exits with real pidfds: an exited child told from a live one, until forgotten."""

from __future__ import annotations

import os
import subprocess
import sys

from tiptop.engine.count.exits import ExitWatch
from tiptop.engine.scan.task import Task


def _task(tid: int, starttime: int = 1) -> Task:
    return Task(tid, tid, starttime, 0, "root", "t", "t", 1, "S", 0, 0, 0)


def test_an_exited_child_is_told_from_a_live_one() -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    watch = ExitWatch(lambda tid, thread: os.pidfd_open(tid))
    try:
        fds = {p.pid: watch.watch(_task(p.pid), False) for p in (live, gone)}
        gone.wait()  # reaped: its pidfd stays readable
        assert watch.ended() == {(gone.pid, 1)}
        assert watch.ended() == {(gone.pid, 1)}  # level-triggered: said again
        gone_fd = fds[gone.pid]
        assert gone_fd is not None
        watch.forget(gone_fd)
        assert watch.ended() == set()
        live.kill()
        live.wait()
        assert watch.ended() == {(live.pid, 1)}
        live_fd = fds[live.pid]
        assert live_fd is not None
        watch.forget(live_fd)
        watch.close()
        assert watch.ended() == set()
        again = subprocess.Popen([sys.executable, "-c", "pass"])
        assert watch.watch(_task(again.pid), False) is not None  # a new set after close
        again.wait()
        assert watch.ended() == {(again.pid, 1)}
    finally:
        live.kill()
        live.wait()
