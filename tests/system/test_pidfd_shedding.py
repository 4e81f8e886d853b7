"""Out of fds, pidfds are given up before counters (``engine.count.exits``): as many processes are
counted as the budget holds for their counters alone. A process left without its pidfd still
skips its ``stat`` read while it sleeps (its ``/proc/PID`` mark holds), and its exit still
ends its row."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.system.scripted_child import Child
from tests.system.test_skipped_reads import CHILD, CountingReads
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.host import Host
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec

N = 20


def budgeted() -> Host:
    """This machine's Host with a soft fd limit of 40, 2 in use, reserve 8
    (``host.fd_reserve``): 30 fds for counters and pidfds."""
    return dataclasses.replace(Host.read(), fd_soft=40, fds_in_use=2)


SCREEN = ScreenSpec(
    "sw",
    "software",
    counters=(CounterSpec("TC", NamedEvent("task-clock"), "task-clock"),),
    columns=(ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"), ColumnSpec("   TC", "%8.0f", "delta(TC)")),
)


def made_a_pid() -> None:
    """A PID made since the last scan, so that no ``/proc`` listing can stand for the marks
    (engine.listing, ``proves``/``unchanged``), whether or not other processes made one:
    the mark itself is checked."""
    subprocess.run(["true"], check=True)


@pytest.fixture
def sleepers(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """N copies of sleep(1) under a name of their own (one thread each: one fd of counters)."""
    exe = tmp_path / "tpshed"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    procs = [subprocess.Popen([str(exe), "1000"]) for _ in range(N)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_counters_come_before_pidfds(sleepers: list[subprocess.Popen[bytes]]) -> None:
    host = budgeted()
    assert host.fd_budget == 30
    s = Sampler(SCREEN, SamplerConfig(only_name="tpshed"), host=host)
    try:
        s.start()
        for _ in range(2):
            time.sleep(0.02)
            f = s.refresh()
        # 20 processes x 1 counter fd fit 30 fds; with a pidfd each only 15 would.
        assert len(f) == N
        assert int((f.status[:, 1] == Status.OK).sum()) == N, f.status[:, 1]
        assert s._attacher.fds_used <= 30
        # The first 15 took a pidfd each; the 16th needed one more fd: the pidfds were given
        # up (at least SHED at a time, here all 15) and no new one taken: 20 processes known
        # by their /proc/PID mark.
        states = s._attacher._counters.items()
        shed = [k[0] for k, st in states if st.mark is not None and st.exit_fd is None]
        assert len(shed) == N and len(s._attacher._exits) == 0
        pid = shed[0]
        reads = CountingReads(s, pid)
        for _ in range(6):
            time.sleep(0.02)
            f = s.refresh()
        assert reads.reads <= 1  # asleep, mark unchanged: at most the sweep's one look
        # A mark that no longer holds (a new process under the PID: a new inode) is looked
        # at again: here the mark kept is made wrong.
        (st,) = [st for k, st in s._attacher._counters.items() if k[0] == pid]
        st.mark, reads.reads = (0, 0), 0
        made_a_pid()
        s.refresh()
        assert reads.reads == 1
        (gone,) = [p for p in sleepers if p.pid == pid]
        gone.kill()
        gone.wait()  # reaped: /proc/PID is no more
        f = s.refresh()
        (i,) = np.flatnonzero(f.tid == pid)
        assert bool(f.dead[i])  # its last interval, shown dead
        f = s.refresh()
        assert pid not in f.tid.tolist() and len(f) == N - 1
    finally:
        s.close()


def test_threads_too() -> None:
    """-H: a process of 20 threads, one counter fd each, in 30 fds: every thread counted;
    one that sleeps on without a pidfd is not read again (its /proc/TID mark holds)."""
    child = Child(CHILD)
    host = budgeted()
    s = Sampler(SCREEN, SamplerConfig(only_pid=child.pid, threads=True), host=host)
    try:
        child.do("threads 19")
        s.start()
        for _ in range(2):
            time.sleep(0.02)
            f = s.refresh()
        assert len(f) == N and int((f.status[:, 1] == Status.OK).sum()) == N, f.status
        states = s._attacher._counters.items()
        shed = [k[0] for k, st in states if st.mark is not None and st.exit_fd is None]
        assert len(shed) == N
        tid = next(t for t in shed if t != child.pid)  # a thread, not the leader
        reads = CountingReads(s, tid)
        for _ in range(6):
            time.sleep(0.02)
            f = s.refresh()
        assert reads.reads <= 1 and tid in f.tid.tolist()
        (st,) = [st for k, st in s._attacher._counters.items() if k[0] == tid]
        st.mark, reads.reads = (0, 0), 0  # as if a new thread had taken its TID
        made_a_pid()
        s.refresh()
        assert reads.reads == 1
    finally:
        s.close()
        child.p.kill()
        child.p.wait()
