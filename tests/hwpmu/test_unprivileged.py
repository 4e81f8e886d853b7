"""Unprivileged use: a plain user counts its own processes and does not see root's.

In the guest ``perf_event_paranoid`` is 1 (run.sh); on a host it is usually 2, which still lets
a user count its own tasks in user mode (perf_event_open(2), "perf_event_paranoid"). Both a
uid-65534 loop and a root loop run; ``tiptop -b`` run as uid 65534 must show the first with
its instructions and not list the second.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.hwpmu.conftest import IN_GUEST, REAL_PMU_RTOL, tiptop_env
from tests.hwpmu.runner import run_around

pytestmark = pytest.mark.hwpmu

NOBODY = 65534


def _nobody_can_run_tiptop() -> str | None:
    """Why uid 65534 cannot import tiptop's dependencies here (e.g. a Python under /root)."""
    r = subprocess.run(
        ["python3", "-c", "import numpy, psutil, cffi, yaml, tiptop.cli"],
        capture_output=True,
        text=True,
        env=tiptop_env(),
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        timeout=120,
    )
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["?"])[-1]


def test_unprivileged_counts_own_not_roots(root_only, loop_children, report) -> None:
    why = _nobody_can_run_tiptop()
    if why is not None:
        assert not IN_GUEST, why
        pytest.skip(f"uid 65534 cannot run this Python's tiptop here: {why}")
    k, n = 4, 2_000_000
    mine = loop_children(k, n, user=NOBODY)
    roots = loop_children(k, n)
    out, _ = run_around(
        [mine, roots],
        ["-b", "-i", "--format", "json", "-p", "tiptop-kloop", "-n", "2", "-d", "1"],
        user=NOBODY,
    )
    recs = [json.loads(line) for line in out.splitlines() if line.strip()]
    pids = {r["pid"] for r in recs}
    assert roots.pid not in pids, "root's process shown to uid 65534"
    ins = sum(r["counters"]["INSN"]["delta"] for r in recs if r["pid"] == mine.pid)
    report(f"uid 65534, K={k} N={n}: own INSN={int(ins)}; root's pid shown: {roots.pid in pids}")
    if IN_GUEST:
        assert 0 < ins - k * n < 2000
    else:
        assert ins == pytest.approx(k * n, rel=REAL_PMU_RTOL)
