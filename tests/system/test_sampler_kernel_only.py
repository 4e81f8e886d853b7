"""Kernel-only software events (context switches, CPU migrations) on the real kernel.

They fire only in kernel context, so user-only counting would show a silent 0
(kernel/events/core.c perf_exclude_event()). Where kernel counting is allowed they are
counted in kernel mode even without -K (exact voluntary switches of a child doing K
nanosleeps); where it is not (uid 65534 at perf_event_paranoid 2) their cells are '?' and
one line says why, while the other software events of the screen still count.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.helpers import nobody_command
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.host import Host
from tiptop.screens import builtin_screens
from tiptop.screens.model import ScreenSpec, Target

K = 200

# Waits for a line, sleeps K times 2 ms (one voluntary context switch each), says done.
SLEEPER = textwrap.dedent(f"""
    import sys, time
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range({K}):
        time.sleep(0.002)
    print("done", flush=True)
    sys.stdin.readline()
""")


def sched_screen() -> ScreenSpec:
    (s,) = [s for s in builtin_screens(Target()) if s.name == "sched"]
    return s


def test_context_switches_counted_without_minus_k() -> None:
    if not Host.read().kernel_counting_allowed:
        pytest.skip("kernel counting is not allowed here (not root, perf_event_paranoid >= 2)")
    p = subprocess.Popen(
        [sys.executable, "-c", SLEEPER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    s = Sampler(sched_screen(), SamplerConfig(only_pid=p.pid))  # no -K
    try:
        assert p.stdout.readline().strip() == "ready"
        s.start()
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "done"
        f = s.refresh()
        (i,) = np.flatnonzero(f.tid == p.pid)
        cs = f.counters.index("CS")
        assert f.counter_status[i, cs] == Status.OK
        delta = f.counter_delta[i, cs]
        # K sleeps switch out K times; reading stdin and writing stdout add a few.
        assert K <= delta <= K + 50, delta
        csw = [c.strip() for c in f.headers].index("CSW/s")
        assert f.status[i, csw] == Status.OK
        # A rate is over the row's own counter window (INTERVAL), not the scan's interval.
        assert f.window is not None and f.window[i] >= f.interval * 0.5
        assert f.values[i, csw] == pytest.approx(delta / f.window[i])
        assert not any("only in the kernel" in m for m in s.messages.lines()), s.messages.lines()
        # The other software events stay user-only without -K.
        flags = {a.config: a.exclude_kernel for g in s.plan.groups for a in g.attrs}
        assert flags == {1: True, 2: True, 3: False, 4: False}, flags
    finally:
        s.close()
        p.kill()
        p.wait()


DRIVER = textwrap.dedent(
    """
    import json, subprocess, sys, time
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tiptop.screens import builtin_screens
    from tiptop.screens.model import Target
    token = sys.argv[1]
    mine = subprocess.Popen(["/bin/sh", "-c", "read x", token], stdin=subprocess.PIPE)
    (scr,) = [s for s in builtin_screens(Target()) if s.name == "sched"]
    s = Sampler(scr, SamplerConfig(only_pid=mine.pid))
    s.start()
    time.sleep(0.2)
    f = s.refresh()
    time.sleep(0.1)
    f2 = s.refresh()
    s.reconfigure(scr)  # binding again must not say it again
    s.refresh()
    out = {
        "mine": mine.pid,
        "tids": [int(t) for t in f.tid],
        "headers": [h.strip() for h in f.headers],
        "status": [[int(x) for x in row] for row in f2.status],
        "opened": sorted(a.config for g in s.plan.groups for a in g.attrs),
        "messages": s.messages.lines(),
    }
    s.close()
    mine.kill()
    mine.wait()
    print(json.dumps(out))
    """
)


@pytest.mark.usefixtures("root_only")
def test_unprivileged_kernel_only_events_are_unreadable_and_said_once() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    paranoid = Host.read().paranoid
    if paranoid is None or paranoid < 2:
        pytest.skip(f"needs perf_event_paranoid >= 2 (it is {paranoid})")
    token = f"tiptop-konly-{os.getpid()}"
    cmd, env = nobody_command(["-c", DRIVER, token])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["tids"] == [out["mine"]]
    status = dict(zip(out["headers"], out["status"][0], strict=True))
    assert status["CSW/s"] == Status.UNREADABLE
    assert status["MIGR/s"] == Status.UNREADABLE
    for ok in ("%CPU", "CPUms", "%TASK", "FLT/s"):
        assert status[ok] == Status.OK, (ok, status)
    # Never opened per task: only task-clock (1) and page-faults (2) are.
    assert out["opened"] == [1, 2]
    said = [m for m in out["messages"] if "only in the kernel" in m]
    assert len(said) == 1, out["messages"]
    (line,) = said
    assert "\n" not in line
    assert "context-switches" in line and "cpu-migrations" in line
    assert f"perf_event_paranoid {paranoid}" in line
    assert "CAP_PERFMON" in line and "root" in line
