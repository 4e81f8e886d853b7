"""Counting whole cgroups with the kernel's cgroup events (issue 48, item 5): 10 cgroups
made here, each running 20 short jobs of 0.1 s of CPU, watched by ``tiptop --textfile
--by cgroup`` as root; each cgroup's ``task-clock`` from its cgroup events agrees with the
cgroup's own ``cpu.stat`` usage within 2%, jobs that no refresh showed included; the
counters take ``events x CPUs`` fds per cgroup, not per task. Needs root and cgroup v2
(``/sys/fs/cgroup`` or systemd's hybrid ``/sys/fs/cgroup/unified``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, removed
from tests.system.exporter_support import samples
from tiptop.kernel.cgroup import read_cpu_stat, unified_root, usage_seconds

CGROUPS, JOBS, BURN = 10, 20, 0.1
#: The ``sched`` screen's counters: task-clock, context-switches, cpu-migrations,
#: page-faults.
EVENTS = 4
#: Each shell waits for a line, runs its jobs, says so, and waits again (idle meanwhile,
#: so that the windows of the two measures need not meet exactly).
SHELL = f"""
read go
for i in $(seq {JOBS}); do
    python3 -c 'import time
end = time.process_time() + {BURN}
while time.process_time() < end: pass'
done
echo done
read end
"""
#: Every 0.5 s; only user nobody's tasks (the test's) are watched.
ARGS = ("-d", "0.5", "-u", "nobody", *os.environ.get("T48_EXTRA", "").split())
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _perf_fds(pid: int) -> int:
    """The perf event fds process ``pid`` holds."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
    return n


def _exported(path: Path) -> dict[str, float]:
    """task-clock seconds per cgroup label in the textfile."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    return {
        dict(labels)["cgroup"]: v
        for (name, labels), v in samples(text).items()
        if name == "tiptop_task_clock_seconds_total"
    }


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"{what}: not within {timeout} s"
        time.sleep(0.2)


def _writes(path: Path, n: int) -> None:
    """Wait for ``n`` more writes of the textfile (each a new file renamed over it)."""
    for _ in range(n):
        _wait(_replaced(path, path.stat().st_ino), 10, "a write of the textfile")


def _replaced(path: Path, inode: int) -> Callable[[], bool]:
    """Whether ``path`` is another file than inode ``inode`` now."""
    return lambda: path.stat().st_ino != inode


def test_cgroup_events_count_every_job_of_ten_cgroups(tmp_path: Path) -> None:
    root = unified_root()
    if os.geteuid() != 0 or root is None:
        pytest.skip("needs root and a cgroup v2 hierarchy to make cgroups in")
    tag = f"tt48ev{os.getpid()}"
    made = [Path(root) / f"{tag}x{i}" for i in range(CGROUPS)]
    shells: list[subprocess.Popen[str]] = []
    textfile = tmp_path / "t.prom"
    exporter = None
    try:
        for d in made:
            d.mkdir()
            shell = subprocess.Popen(
                [*NOBODY, "sh", "-c", SHELL],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            shells.append(shell)
            (d / "cgroup.procs").write_text(str(shell.pid))  # before it forks any job
        exporter = subprocess.Popen(
            [*TIPTOP, "--textfile", str(textfile), "--by", "cgroup", "-S", "sched", *ARGS],
            stderr=subprocess.PIPE,
            text=True,
        )
        labels = [d.name for d in made]
        _wait(lambda: set(labels) <= _exported(textfile).keys(), 60, "every cgroup's series")
        before = _exported(textfile)
        usage0 = [usage_seconds(root, f"/{d.name}") for d in made]
        for shell in shells:
            assert shell.stdin is not None
            shell.stdin.write("go\n")
            shell.stdin.flush()
        fds = 0
        for shell in shells:
            assert shell.stdout is not None
            fds = max(fds, _perf_fds(exporter.pid))
            assert shell.stdout.readline() == "done\n"
        usage1 = [usage_seconds(root, f"/{d.name}") for d in made]
        _writes(textfile, 2)
        after = _exported(textfile)
        for label, u0, u1 in zip(labels, usage0, usage1, strict=True):
            assert u0 is not None and u1 is not None
            used = u1 - u0
            counted = after[label] - before[label]
            assert used > JOBS * BURN * 0.9, (label, used)
            print(f"{label}: cpu.stat {used:.3f} s, cgroup events {counted:.3f} s")
            assert abs(counted - used) <= 0.02 * used, (label, counted, used)
        cpus = os.cpu_count() or 1
        print(f"perf fds {fds}")
        assert CGROUPS * EVENTS * cpus <= fds <= EVENTS * cpus * CGROUPS + 16, fds
    finally:
        if exporter is not None:
            exporter.send_signal(signal.SIGTERM)
            exporter.wait(timeout=30)
        for shell in shells:
            shell.kill()
            shell.wait()
        removed(*made)


#: Burns the CPU seconds of each line it reads, in process (no child to count), then says
#: so; ``end`` ends it.
BURNER = """
import sys, time
for line in sys.stdin:
    if line.strip() == "end":
        break
    end = time.process_time() + float(line)
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""


def _burner_in(cgroup: Path) -> subprocess.Popen[str]:
    """A burner of user nobody's in ``cgroup``: the shell moves itself there, as root,
    before it becomes nobody's python, so that no scan of nobody's tasks sees it anywhere
    else."""
    move_then_run = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
    return subprocess.Popen(
        ["sh", "-c", move_then_run, str(cgroup), *NOBODY, "python3", "-c", BURNER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _usage(cgroup: Path) -> float:
    """CPU seconds of ``cgroup``'s tasks and its descendants' (``usage_usec`` of its
    ``cpu.stat``, hierarchical: Documentation/admin-guide/cgroup-v2.rst)."""
    stat = read_cpu_stat(str(cgroup))
    assert stat is not None, f"no usage_usec in {cgroup}/cpu.stat"
    return stat.usage


def test_a_leaf_that_gains_a_child_cgroup_is_not_counted_twice(tmp_path: Path) -> None:
    """The kernel counts a child cgroup's tasks into its parent's events: once the
    followed leaf gains a child, its series counts its own task only (by the task's own
    counters) and the child's series the child's task, each as its cgroup's ``cpu.stat``
    says (the parent's usage less the child's), not the child's time twice."""
    root = unified_root()
    if os.geteuid() != 0 or root is None:
        pytest.skip("needs root and a cgroup v2 hierarchy to make cgroups in")
    parent = Path(root) / f"tt53split{os.getpid()}"
    child = parent / "c"
    textfile = tmp_path / "t.prom"
    burners: list[subprocess.Popen[str]] = []
    exporter = None
    try:
        parent.mkdir()
        burners.append(_burner_in(parent))
        exporter = subprocess.Popen(
            [*TIPTOP, "--textfile", str(textfile), "--by", "cgroup", "-S", "sched", *ARGS],
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait(lambda: parent.name in _exported(textfile), 60, "the parent's series")
        child.mkdir()
        burners.append(_burner_in(child))
        _wait(lambda: len(_exported(textfile).keys() - {parent.name}) > 0, 30, "the child's")
        (child_label,) = [k for k in _exported(textfile) if k != parent.name and "tt53" in k]
        _writes(textfile, 3)  # the parent's task has its own counters and their baseline
        before = _exported(textfile)
        usage0 = [_usage(parent), _usage(child)]
        for b in burners:
            assert b.stdin is not None
            b.stdin.write(f"{BURN * 5}\n")
            b.stdin.flush()
        for b in burners:
            assert b.stdout is not None and b.stdout.readline() == "done\n"
        usage1 = [_usage(parent), _usage(child)]
        _writes(textfile, 2)
        after = _exported(textfile)
        used_child = usage1[1] - usage0[1]
        used_own = usage1[0] - usage0[0] - used_child  # the parent's usage holds the child's
        counted_own = after[parent.name] - before[parent.name]
        counted_child = after[child_label] - before[child_label]
        print(f"own: cpu.stat {used_own:.3f} s, counted {counted_own:.3f} s")
        print(f"child: cpu.stat {used_child:.3f} s, counted {counted_child:.3f} s")
        assert used_own > BURN * 5 * 0.9 and used_child > BURN * 5 * 0.9
        assert abs(counted_child - used_child) <= 0.02 * used_child + 0.01
        assert abs(counted_own - used_own) <= 0.02 * used_own + 0.01
        assert exporter.poll() is None
    finally:
        if exporter is not None:
            exporter.send_signal(signal.SIGTERM)
            _out, err = exporter.communicate(timeout=30)
            print(err)
        for b in burners:
            b.kill()
            b.wait()
        removed(child, parent)
