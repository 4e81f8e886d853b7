"""The exporter's cgroup walk (issue 48: ``--textfile --by cgroup`` as root on cgroup v2,
every task watched, reads the cgroup tree instead of ``/proc``; tiptop/engine/cgroupwalk.py)
on real cgroups made here: a cgroup's processes counted, the CPU and ``task-clock`` of a
known loop, a cgroup made after the start found with the CPU it used before, a removed
cgroup's series ended (the per-task exporter keeps them ``--series-expiry`` seconds). Needs
root and cgroup v2 (``/sys/fs/cgroup`` or systemd's hybrid ``/sys/fs/cgroup/unified``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.helpers import TIPTOP, removed
from tests.system.exporter_support import samples
from tests.system.test_exporter_cgroup import made_cgroup
from tiptop.kernel.cgroup import usage_seconds

#: Burns ``float(argv[1])`` s of CPU once at the start, then one more time per line read
#: (saying ``done`` after each), and ends at end of input.
BURNER = """
import sys, time
def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass
burn(float(sys.argv[1]))
for line in sys.stdin:
    burn(float(line))
    print("done", flush=True)
"""


def exported(path: Path) -> dict[tuple[str, str], float]:
    """``(metric, cgroup label)`` -> value, of the textfile now."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    return {
        (name, dict(labels).get("cgroup", "")): v for (name, labels), v in samples(text).items()
    }


def wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def writes(path: Path, n: int) -> None:
    """Wait for ``n`` more writes of the textfile (each a new inode)."""
    for _ in range(n):
        inode = path.stat().st_ino
        wait(lambda: path.stat().st_ino != inode, 10, "a write")  # noqa: B023


@contextmanager
def in_cgroup(cgroup: Path, argv: list[str]) -> Iterator[subprocess.Popen[str]]:
    """``argv`` run in ``cgroup`` from its first instruction (its shell moves itself in,
    then execs it), stdin and stdout piped; killed at the end."""
    move = f'echo $$ > "{cgroup}/cgroup.procs" && exec "$@"'
    proc = subprocess.Popen(
        ["sh", "-c", move, "sh", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_the_walk_counts_processes_cpu_new_and_removed_cgroups(tmp_path: Path) -> None:
    loop, sleepers = made_cgroup("tt48wl"), made_cgroup("tt48ws")
    late = loop.with_name(f"tt48wn{os.getpid()}")
    textfile = tmp_path / "t.prom"
    root = str(loop.parent)
    with ExitStack() as stack:
        for cg in (loop, sleepers, late):
            stack.callback(removed, cg)
        burner = stack.enter_context(in_cgroup(loop, [sys.executable, "-c", BURNER, "0"]))
        for _ in range(3):
            stack.enter_context(in_cgroup(sleepers, ["sleep", "120"]))
        exporter = subprocess.Popen(
            [*TIPTOP, "--textfile", str(textfile), "--by", "cgroup", "-S", "sched", "-d", "0.5"],
            stderr=subprocess.PIPE,
            text=True,
        )
        stack.callback(exporter.wait, 30)
        stack.callback(exporter.send_signal, signal.SIGTERM)
        tasks = ("tiptop_tasks", sleepers.name)
        wait(lambda: tasks in exported(textfile), 30, "the sleepers' series")
        writes(textfile, 1)
        now = exported(textfile)
        assert now[tasks] == 3
        assert now[("tiptop_tasks", loop.name)] == 1

        # A known loop: 1 s of CPU, and what its cgroup's cpu.stat says it used.
        cpu, clock = (
            ("tiptop_cpu_seconds_total", loop.name),
            ("tiptop_task_clock_seconds_total", loop.name),
        )
        usage0 = usage_seconds(root, f"/{loop.name}")
        assert burner.stdin is not None and burner.stdout is not None
        burner.stdin.write("1.0\n")
        burner.stdin.flush()
        assert burner.stdout.readline() == "done\n"
        usage1 = usage_seconds(root, f"/{loop.name}")
        assert usage0 is not None and usage1 is not None
        writes(textfile, 2)
        after = exported(textfile)
        used = usage1 - usage0
        print(
            f"loop: cpu.stat {used:.3f} s, exported {after[cpu] - now[cpu]:.3f} s CPU, "
            f"{after[clock] - now[clock]:.3f} s task-clock"
        )
        assert 1.0 <= used < 1.2, used
        assert abs(after[cpu] - now[cpu] - used) <= 0.02 * used, (after[cpu] - now[cpu], used)
        assert abs(after[clock] - now[clock] - used) <= 0.02 * used, after[clock] - now[clock]

        # A cgroup made now is found, with the 0.3 s it ran before any refresh saw it.
        late.mkdir()
        with in_cgroup(late, [sys.executable, "-c", BURNER, "0.3"]):
            wait(lambda: ("tiptop_tasks", late.name) in exported(textfile), 10, "the new one")
            writes(textfile, 1)
            found = exported(textfile)
            assert found[("tiptop_tasks", late.name)] == 1
            born = usage_seconds(root, f"/{late.name}")
            assert born is not None
            assert found[("tiptop_cpu_seconds_total", late.name)] >= 0.3
            assert abs(found[("tiptop_cpu_seconds_total", late.name)] - born) <= 0.02 * born
        removed(late)
        assert not late.exists()
        writes(textfile, 3)
        assert not any(label == late.name for _m, label in exported(textfile)), "series kept"
        assert exporter.poll() is None
