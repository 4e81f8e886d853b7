"""The unprivileged path for real: a driver runs the sampler as uid 65534 (setpriv, through
``tests.helpers.nobody_command``) with kernel counting asked for, while a root-owned sleeper
runs beside its own sleeper."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import nobody_command
from tiptop.host import Host

DRIVER = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tests.support.builders import screen
    token = sys.argv[1]
    # /bin/sh, not sys.executable: uid 65534 may not reach the interpreter's own path.
    # A shell blocked in its read builtin: no child process to outlive it.
    mine = subprocess.Popen(["/bin/sh", "-c", "read x", token], stdin=subprocess.PIPE)
    scr = screen("sw", counters={"PF": "page-faults"},
                 columns=[("PF", "%5.0f", "delta(PF)"), ("T", "%5.0f", "PF")])
    s = Sampler(scr, SamplerConfig(kernel=True, only_name=token, match_cmdline=True))
    time.sleep(0.3)
    s.start()
    time.sleep(0.2)
    f = s.refresh()
    out = {
        "mine": mine.pid,
        "self": os.getpid(),
        "rows": [[int(t), u, [int(x) for x in st]] for t, u, st in zip(f.tid, f.user, f.status)],
        "exclude_kernel": [a.exclude_kernel for g in s.plan.groups for a in g.attrs],
        "messages": s.messages.lines(),
        "fds": s.fds_used,
    }
    s.close()
    mine.kill()
    mine.wait()
    print(json.dumps(out))
    """
)


@pytest.mark.usefixtures("root_only")
def test_unprivileged_user_only_and_own_tasks() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    paranoid = Host.read().paranoid
    if paranoid != 2:
        pytest.skip(f"needs perf_event_paranoid=2 to test its message (it is {paranoid})")
    token = f"tiptop-unpriv-{os.getpid()}"
    root_sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    try:
        cmd, env = nobody_command(["-c", DRIVER, token])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd="/tmp")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
    finally:
        root_sleeper.kill()
        root_sleeper.wait()
    tids = [row[0] for row in out["rows"]]
    # Own process shown and counted; root's sleeper (same token) not shown at all.
    assert out["mine"] in tids
    assert root_sleeper.pid not in tids
    (mine,) = [row for row in out["rows"] if row[0] == out["mine"]]
    assert mine[1] == "nobody" or mine[1] == "65534"
    assert mine[2] == [0, 0]  # Status.OK in both columns
    assert out["self"] in tids  # the driver's command line holds the token too
    assert out["fds"] >= 2, out
    # Counting is user-only, and the one message about -K names paranoid level 2.
    assert out["exclude_kernel"] == [True]
    kmsgs = [m for m in out["messages"] if "-K" in m]
    assert len(kmsgs) == 1 and "perf_event_paranoid is 2" in kmsgs[0], out["messages"]
    assert "user space only" in kmsgs[0]
