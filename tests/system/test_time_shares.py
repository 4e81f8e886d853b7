"""Where a task's time went, on the real kernel (issue 47): constructed workloads under the
test's own control, read by ``tiptop -b -S state --format json`` and ``--why``, and against
an oracle nobody here wrote, ``perf sched record`` + ``perf sched timehist`` (scheduler
tracepoints, no hardware PMU needed).

The machine may be loaded (CI shares it; the suite must pass with two CPU loops beside it),
so a workload whose share another load would change runs first (root): the sleeper and the
fsync loop with a real-time policy (SCHED_FIFO, before any normal task), the throttled loop
at nice -20 (CPU limits throttle normal tasks only, Documentation/scheduler/sched-bwc.rst).
The pinned pair needs none: two loops on one CPU wait for it whatever else runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import removed, run
from tiptop.host import Host

#: A CPU loop for ``seconds`` of wall time (forever without), that first stops itself when
#: told (the oracle test continues it once both tools watch).
LOOP = """
import os, signal, sys, time
if sys.argv[1] == "stop":
    os.kill(os.getpid(), signal.SIGSTOP)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
"""
#: On a CPU 10 ms of every 100 ms: 10 ms of its own CPU time, then 90 ms asleep.
SLEEPER = """
import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.01:
        pass
    time.sleep(0.09)
"""
#: Write 4 KiB and fsync, forever: blocked on the disk most of the time.
FSYNCER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
while True:
    os.pwrite(fd, os.urandom(4096), 0)
    os.fsync(fd)
"""

root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root (priorities, cgroups, sysctl, perf sched)"
)


def start(
    code: str,
    *args: str,
    cpu: int | None = None,
    nice: int = 0,
    cgroup: str | None = None,
    realtime: bool = False,
) -> subprocess.Popen[bytes]:
    """A workload: ``python3 -c code args`` pinned to ``cpu``, at ``nice`` (or with
    ``realtime``, SCHED_FIFO: before every other task but the kernel's), in ``cgroup`` (its
    ``cgroup.procs`` file) from its first instruction."""

    def setup() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        if nice:
            os.nice(nice)
        if realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        if cgroup is not None:
            with open(cgroup, "w") as f:
                f.write(str(os.getpid()))

    return subprocess.Popen([sys.executable, "-c", code, *args], preexec_fn=setup)


@contextlib.contextmanager
def running(*procs: subprocess.Popen[bytes]) -> Iterator[None]:
    try:
        yield
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


class Shares(dict[str, float]):
    """One task's mean % columns by header, and its bottleneck node per refresh."""

    def __init__(self, columns: dict[str, float], nodes: list[str]) -> None:
        super().__init__(columns)
        self.nodes = nodes


def shares(*pids: int, refreshes: int = 3, skip: int = 0) -> dict[int, Shares]:
    """Per PID, its ``state`` columns over ``refreshes`` refreshes of 1 s (the first
    ``skip`` left out): each % column the interval-weighted mean of its known values."""
    r = run("-b", "-S", "state", "-i", "--format", "json", "-d", "1", "-n", str(refreshes))
    assert r.returncode == 0, r.stderr
    sums: dict[int, dict[str, float]] = {p: {} for p in pids}
    weight: dict[int, dict[str, float]] = {p: {} for p in pids}
    nodes: dict[int, list[str]] = {p: [] for p in pids}
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        if rec["pid"] not in sums or rec["iteration"] < skip:
            continue
        for col, value in rec["columns"].items():
            if value is not None and col.startswith("%"):
                sums[rec["pid"]][col] = sums[rec["pid"]].get(col, 0.0) + value * rec["interval"]
                weight[rec["pid"]][col] = weight[rec["pid"]].get(col, 0.0) + rec["interval"]
        nodes[rec["pid"]].append(rec["nodes"]["BOTTLENECK"])
    out = {p: Shares({c: sums[p][c] / weight[p][c] for c in sums[p]}, nodes[p]) for p in pids}
    for p in pids:
        assert out[p], f"no row of {p}: {r.stdout[:2000]}"
    return out


def why(pid: int) -> str:
    """``--why``'s summary line (its third line: the screen's, the note's, then the tree's)."""
    r = run("-b", "--why", str(pid), "-n", "2", "-d", "1")
    assert r.returncode == 0, r
    heads = [ln for ln in r.stdout.splitlines() if re.match(rf"\d\d:\d\d:\d\d PID {pid} ", ln)]
    assert len(heads) == 2, r.stdout
    return heads[-1]


def test_two_loops_pinned_to_one_cpu_wait_for_it() -> None:
    """Each reads on a CPU + waiting >= 93% and waiting >= 40%; when the pair had the CPU
    to itself (their runs add up to it), each ran 50 +- 7%; ``--why`` names the wait."""
    cpu = min(os.sched_getaffinity(0))
    a, b = (start(LOOP, "go", "60", cpu=cpu) for _ in range(2))
    with running(a, b):
        time.sleep(0.5)
        got = shares(a.pid, b.pid)
        for pid in (a.pid, b.pid):
            s = got[pid]
            assert s["%RUN"] + s["%WAIT"] >= 93.0, got
            assert s["%WAIT"] >= 40.0, got
            assert set(s.nodes) == {"Wait"}, got
        if got[a.pid]["%RUN"] + got[b.pid]["%RUN"] >= 93.0:  # nothing else on their CPU
            assert abs(got[a.pid]["%RUN"] - 50.0) <= 7.0, got
        assert "waiting for a CPU" in why(a.pid)


def cpu_cgroup(tmp_name: str) -> Path:
    """A new cgroup of the ``cpu`` controller limited to 0.2 CPU (v1 ``cpu.cfs_quota_us``
    or v2 ``cpu.max``, whichever hierarchy this machine has), made under its root."""
    where = Host.read().cpu_cgroups
    if where is None:
        pytest.skip("no cgroup hierarchy with the cpu controller here")
    path = Path(where.mount) / tmp_name
    path.mkdir()
    try:
        if where.v2:
            (path / "cpu.max").write_text("20000 100000\n")
        else:
            (path / "cpu.cfs_period_us").write_text("100000\n")
            (path / "cpu.cfs_quota_us").write_text("20000\n")
    except OSError as e:
        path.rmdir()
        pytest.skip(f"cannot set a CPU limit: {e}")
    return path


@root_only
def test_a_loop_under_a_cgroups_limit_is_throttled() -> None:
    """0.2 CPU: on a CPU 20 +- 5%, throttled >= 60%; ``--why`` names the cgroup's limit.
    The limit holds it 80% of each period; once let go it may still wait for a CPU that
    another task holds (a wait for a CPU, not throttling), which on a loaded machine is
    part of the rest."""
    group = cpu_cgroup(f"tiptop-test-{os.getpid()}")
    try:
        loop = start(LOOP, "go", "60", nice=-20, cgroup=str(group / "cgroup.procs"))
        with running(loop):
            time.sleep(0.5)
            s = shares(loop.pid, refreshes=4, skip=1)[loop.pid]  # the first: no cgroup diff yet
            assert abs(s["%RUN"] - 20.0) <= 5.0, s
            assert s["%THRT"] >= 60.0 and s["%THRT"] <= s["%WAIT"] + 0.5, s
            assert set(s.nodes) == {"Throttled"}, s
            assert "throttled by its cgroup's CPU limit (0.2 CPU): " in why(loop.pid)
    finally:
        removed(group)  # the killed loop leaves its cgroup when it is reaped


@root_only
def test_a_task_asleep_90_percent_has_no_bottleneck() -> None:
    sleeper = start(SLEEPER, realtime=True)
    with running(sleeper):
        time.sleep(0.5)
        s = shares(sleeper.pid)[sleeper.pid]
        assert s["%SLEEP"] >= 85.0, s
        assert 5.0 <= s["%RUN"] <= 15.0, s
        assert set(s.nodes) == {"-"}, s
        assert why(sleeper.pid).endswith(": no bottleneck")


@contextlib.contextmanager
def delay_accounting() -> Iterator[None]:
    """``kernel.task_delayacct`` set to 1, and set back."""
    knob = Path("/proc/sys/kernel/task_delayacct")
    try:
        was = knob.read_text()
        knob.write_text("1\n")
    except OSError as e:
        pytest.skip(f"kernel.task_delayacct cannot be set here: {e}")
    try:
        yield
    finally:
        knob.write_text(was)


@root_only
def test_fsync_in_a_loop_is_blocked_on_io(tmp_path: Path) -> None:
    kind = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True)
    if kind.stdout.strip() in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on {kind.stdout.strip()}: fsync waits for no device")
    with delay_accounting():
        writer = start(FSYNCER, str(tmp_path / "data"), realtime=True)
        with running(writer):
            time.sleep(0.5)
            s = shares(writer.pid)[writer.pid]
            assert s["%IO"] >= 30.0, s
            assert "blocked on I/O" in why(writer.pid)


# ----------------------------------------------------------------------------- the oracle


def perf_sched(data: Path, pids: set[int], since: float) -> dict[int, tuple[float, float]]:
    """Per PID, seconds on a CPU and seconds runnable on a run queue after ``since``
    (CLOCK_MONOTONIC), from ``perf sched timehist --state``: each line is a task switched
    out, with the time it ran and, before it, its wait since it last left a CPU and its
    delay since its wakeup; a task that left the CPU runnable (state R, preempted) waited
    all of that wait on the run queue, any other only its delay since its wakeup."""
    r = subprocess.run(
        ["perf", "sched", "timehist", "-i", str(data), "--state"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    run_s: dict[int, float] = dict.fromkeys(pids, 0.0)
    wait_s: dict[int, float] = dict.fromkeys(pids, 0.0)
    last: dict[int, str] = {}
    line = re.compile(
        r"^\s*(\d+\.\d+)\s+\[\d+\]\s+.*\[(\d+)(?:/\d+)?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
    )
    for text in r.stdout.splitlines():
        m = line.match(text)
        if m is None or int(m[2]) not in pids:
            continue
        pid, stamp = int(m[2]), float(m[1])
        wait, delay, ran, state = float(m[3]), float(m[4]), float(m[5]), m[6]
        if stamp > since:
            run_s[pid] += ran / 1e3
            wait_s[pid] += (wait if last.get(pid) == "R" else delay) / 1e3
        last[pid] = state
    return {p: (run_s[p], wait_s[p]) for p in pids}


@root_only
def test_run_and_wait_agree_with_perf_sched_timehist(tmp_path: Path) -> None:
    """The pinned pair, stopped at birth until both tools watch, then 4 s of CPU loop: each
    one's run time and wait time summed over tiptop's refreshes (its last one the exited
    task's) within 5% of perf's over the same span."""
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (Debian's linux-perf; .ci/run installs it)")
    data = tmp_path / "sched.data"
    perf = subprocess.Popen(
        ["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-o", str(data), "--", "sleep", "30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    cpu = min(os.sched_getaffinity(0))
    pair = [start(LOOP, "stop", "4", cpu=cpu) for _ in range(2)]
    with running(*pair):
        for p in pair:  # tiptop first sees them stopped: nothing of them before is its
            wait_for_state(p.pid, "T")
        top = subprocess.Popen(
            [*TIPTOP_JSON, "-d", "0.5", "-n", "14", "-i"], stdout=subprocess.PIPE, text=True
        )
        time.sleep(1.5)  # both tools have their first counts of the stopped pair
        if perf.poll() is not None:
            assert perf.stderr is not None
            pytest.skip(f"perf sched record cannot run here: {perf.stderr.read()[-300:]!r}")
        since = time.monotonic()
        for p in pair:
            os.kill(p.pid, signal.SIGCONT)
        out, _ = top.communicate(timeout=60)
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=60)
    pids = {p.pid for p in pair}
    ours: dict[int, list[float]] = {p: [0.0, 0.0] for p in pids}
    for line in out.splitlines():
        rec = json.loads(line)
        if rec["pid"] in pids:
            cols, dt = rec["columns"], rec["interval"]
            ours[rec["pid"]][0] += cols["%RUN"] * dt / 100.0
            ours[rec["pid"]][1] += cols["%WAIT"] * dt / 100.0
    theirs = perf_sched(data, pids, since)
    for pid in pids:
        (run_s, wait_s), (prun, pwait) = ours[pid], theirs[pid]
        assert prun > 0.5 and pwait > 0.5, (pid, theirs)
        assert abs(run_s - prun) <= 0.05 * prun, (pid, ours[pid], theirs[pid])
        assert abs(wait_s - pwait) <= 0.05 * pwait, (pid, ours[pid], theirs[pid])


TIPTOP_JSON = [sys.executable, "-m", "tiptop", "-b", "-S", "state", "--format", "json"]


def wait_for_state(pid: int, state: str, timeout: float = 10.0) -> None:
    """Until process ``pid``'s state (proc(5) ``stat`` field 3) is ``state``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2][:1] == state:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never reached state {state}")
