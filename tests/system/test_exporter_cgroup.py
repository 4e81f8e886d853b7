"""``tiptop --serve --by cgroup`` counts a leaf cgroup's whole CPU from its own
``cpu.stat`` (issue 37, item 4): jobs too short to be shown in any refresh still count. A
real cgroup is made in the v2 hierarchy (``/sys/fs/cgroup`` or systemd's hybrid
``/sys/fs/cgroup/unified``); needs root."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import removed
from tests.system.exporter_support import samples, serving, wait_for
from tiptop.kernel.cgroup import unified_root, usage_seconds

#: Jobs, and the CPU seconds each burns: shorter than the exporter's refresh.
JOBS, BURN = 8, 0.15

SHELL = f"""
echo $$ > cgroup.procs
sleep 1
for i in $(seq {JOBS}); do
    python3 -c 'import time
end = time.process_time() + {BURN}
while time.process_time() < end: pass'
done
sleep 2
"""


def made_cgroup(prefix: str = "tt37cg") -> Path:
    """A new cgroup in the v2 hierarchy, named ``prefix`` and this PID; skips without root
    or a hierarchy to make it in."""
    root = unified_root()
    if os.geteuid() != 0 or root is None:
        pytest.skip("needs root and a cgroup v2 hierarchy to make a cgroup in")
    path = Path(root) / f"{prefix}{os.getpid()}"
    try:
        path.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup here: {exc.strerror}")
    return path


def exported(text: str, label: str) -> float:
    return sum(
        v
        for (name, labels), v in samples(text).items()
        if name == "tiptop_cpu_seconds_total" and ("cgroup", label) in labels
    )


def test_a_cgroups_short_jobs_are_counted_from_its_cpu_stat() -> None:
    cg = made_cgroup()
    label = cg.name
    try:
        with serving("-S", "sched", "--by", "cgroup", "-d", "0.5") as (proc, address):
            wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
            shell = subprocess.Popen(["sh", "-c", SHELL], cwd=cg)
            assert shell.wait(timeout=60) == 0
            used = usage_seconds(str(cg.parent), f"/{label}")
            assert used is not None and used >= JOBS * BURN * 0.9
            time.sleep(1.2)  # two refreshes after the last job
            text = wait_for(address, lambda t: exported(t, label) >= 0.9 * used, timeout=5)
            got = exported(text, label)
            print(f"cgroup {label}: cpu.stat {used:.3f} s, exported {got:.3f} s")
            assert 0.9 * used <= got <= 1.1 * used + 0.05, (got, used)
            assert proc.poll() is None
    finally:
        removed(cg)
