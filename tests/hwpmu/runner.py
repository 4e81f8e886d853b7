"""Run this tree's ``tiptop -b`` around loop children: attach first, then let the loops run.

The batch mode prints no primer iteration (tiptop/batch.py), so "tiptop has attached" is seen
from outside: its ``/proc/PID/fd`` gains ``anon_inode:[perf_event]`` links and stops changing
(the sampler opens a task's groups at discovery, in ``start()``). Only then are the children
released, so every loop instruction falls inside the counted intervals.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence

from tests.hwpmu.conftest import LoopChild, tiptop_cmd, tiptop_env


def perf_fds(pid: int) -> int:
    """How many perf_event fds ``pid`` holds (0 when it is gone)."""
    n = 0
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == "anon_inode:[perf_event]":
                n += 1
        except OSError:
            pass
    return n


def run_around(
    children: Sequence[LoopChild],
    args: Sequence[str],
    *,
    user: int | None = None,
    min_fds: int = 1,
    timeout: float = 240,
) -> tuple[str, str]:
    """Start ``tiptop ARGS`` (as ``user``), wait until it attached (>= ``min_fds`` perf fds,
    unchanged for 0.3 s), release every child, wait for the loops, then for tiptop to end
    (ARGS must bound it with ``-n``). Returns (stdout, stderr); asserts exit status 0."""
    p = subprocess.Popen(
        tiptop_cmd(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=tiptop_env(),
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
        cwd="/",
    )
    try:
        deadline = time.monotonic() + timeout
        last, stable_since = -1, time.monotonic()
        while True:
            if p.poll() is not None:
                out, err = p.communicate()
                raise AssertionError(f"tiptop ended before attaching (rc {p.returncode}): {err}")
            n = perf_fds(p.pid)
            now = time.monotonic()
            if n != last:
                last, stable_since = n, now
            elif n >= min_fds and now - stable_since >= 0.3:
                break
            assert now < deadline, f"tiptop never attached ({n} perf fds)"
            time.sleep(0.02)
        for c in children:
            c.go()
        for c in children:
            c.wait_done()
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        for c in children:
            c.finish()
    assert p.returncode == 0, f"tiptop exit {p.returncode}: {err}"
    return out, err
