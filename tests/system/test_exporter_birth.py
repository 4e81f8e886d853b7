"""``tiptop --serve`` counts a process from its birth (issue 37): ten short jobs of 0.4 s
of CPU each, started one after the other while the exporter refreshes every 0.2 s, are
exported with at least 90% of the CPU time their parent's wait4(2) reports. Before, the
first (hidden) interval of each was lost: 96% of such jobs' CPU went missing."""

from __future__ import annotations

import os
import subprocess

from tests.system.exporter_support import child, samples, scrape, serving, wait_for

#: Jobs, and the CPU seconds each burns.
JOBS, BURN = 10, 0.4
COMM = "tt37born"
BODY = f"""
import time
end = time.process_time() + {BURN}
while time.process_time() < end:
    pass
"""


def exported_cpu(text: str) -> float:
    return sum(
        value
        for (name, labels), value in samples(text).items()
        if name == "tiptop_cpu_seconds_total" and ("comm", COMM) in labels
    )


def test_short_jobs_are_counted_from_birth() -> None:
    with serving("-S", "sched", "--by", "comm", "-d", "0.2") as (proc, address):
        wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
        used = 0.0
        for _ in range(JOBS):
            job = child(COMM, BODY, stdout=subprocess.DEVNULL)
            _pid, status, usage = os.wait4(job.pid, 0)
            job.returncode = os.waitstatus_to_exitcode(status)
            assert job.returncode == 0
            used += usage.ru_utime + usage.ru_stime
        text = wait_for(address, lambda t: exported_cpu(t) >= 0.9 * used, timeout=5)
        got = exported_cpu(text)
        print(f"{JOBS} jobs used {used:.3f} s of CPU (wait4), exported {got:.3f} s")
        assert got >= 0.9 * used, (got, used)
        assert got <= 1.05 * used + 0.05, (got, used)  # nothing counted twice
        assert proc.poll() is None
        assert scrape(address)
