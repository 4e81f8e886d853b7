"""Tracepoints by name on the real kernel, and the ``msr`` PMU in ``--list-events``.

The kernel raises ``sched:sched_switch`` in ``__schedule()`` for the task leaving the CPU,
right where it counts that task's switch in ``nvcsw``/``nivcsw`` (kernel/sched/core.c), and
before its per-task events are scheduled out: counted on a task it must equal the change of
``voluntary_ctxt_switches + nonvoluntary_ctxt_switches`` (proc(5), ``/proc/PID/status``),
and the ``context-switches`` software event raised on the same path. A child doing N reads
that each block on a pipe switches out voluntarily exactly N times.

tracefs is mounted for these tests, when it is not, in a private mount namespace of their
own (``unshare -m``, root only): nothing outside them sees it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO, TIPTOP, nobody_command

N = 200

SCREEN = textwrap.dedent("""
    screens:
      - name: tp
        desc: tracepoints
        counters:
          SW: sched:sched_switch
          CS: context-switches
        columns:
          - {header: "  SWITCH", format: "%8.0f", expr: delta(SW)}
          - {header: "      CS", format: "%8.0f", expr: delta(CS)}
""")

# A child that blocks N times in a pipe read (each read waits for the driver's byte); the
# driver writes each byte only once the child sleeps in its read (wchan set: dequeued, so
# its switch out is done or under way and will be counted).
DRIVER = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tiptop.screens import load_text
    from tiptop.screens.model import Target
    n = int(sys.argv[1])
    (scr,) = load_text(open(sys.argv[2]).read(), Target(), yaml=True).screens
    go_r, go_w = os.pipe()
    ack_r, ack_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c",
        "import os, sys\\n"
        "r, w = int(sys.argv[1]), int(sys.argv[2])\\n"
        "while True:\\n"
        "    os.write(w, b'.')\\n"
        "    if not os.read(r, 1): break\\n",
        str(go_r), str(ack_w)], pass_fds=(go_r, ack_w))

    def blocked():
        while open(f"/proc/{child.pid}/wchan").read().strip() in ("", "0"):
            time.sleep(0.0002)

    def switches():
        with open(f"/proc/{child.pid}/status") as f:
            d = dict(line.split(":", 1) for line in f)
        return [int(d["voluntary_ctxt_switches"]), int(d["nonvoluntary_ctxt_switches"])]

    os.read(ack_r, 1)
    blocked()
    before = switches()
    s = Sampler(scr, SamplerConfig(only_pid=child.pid))
    s.start()
    for _ in range(n):
        os.write(go_w, b"x")
        os.read(ack_r, 1)
        blocked()
    time.sleep(0.05)
    f = s.refresh()
    after = switches()
    (i,) = [k for k, t in enumerate(f.tid) if t == child.pid]
    out = {
        "delta": {a: float(f.counter_delta[i, j]) for j, a in enumerate(f.counters)},
        "status": {a: int(f.counter_status[i, j]) for j, a in enumerate(f.counters)},
        "switches": [a - b for a, b in zip(after, before)],
        "attrs": [(a.type, a.exclude_kernel) for g in s.plan.groups for a in g.attrs],
        "messages": s.messages.lines(),
    }
    s.close()
    os.close(go_w)
    child.wait()
    print(json.dumps(out))
    """
)


def _with_tracefs(cmd: list[str], *, mounted: bool = True) -> list[str]:
    """``cmd`` run where tracefs is mounted (``mounted``) or is not, in a private mount
    namespace when this machine's state is not the one asked for (root only)."""
    have = os.path.isdir("/sys/kernel/tracing/events")
    if have == mounted:
        return cmd
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("tracefs state not as needed, and no root + unshare(1) to make it so")
    step = (
        "mount -t tracefs nodev /sys/kernel/tracing"
        if mounted
        else "umount /sys/kernel/tracing; umount /sys/kernel/debug/tracing; true"
    )
    return ["unshare", "-m", "sh", "-c", f'{step} 2>/dev/null && exec "$@"', "sh", *cmd]


def _screen_file() -> str:
    """The screen in a directory uid 65534 may read too."""
    d = tempfile.mkdtemp(prefix="tiptop-tp-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "tp.yaml")
    Path(path).write_text(SCREEN)
    os.chmod(path, 0o644)
    return path


@pytest.mark.usefixtures("root_only")
def test_sched_switch_counts_each_switch_of_the_task() -> None:
    cmd = _with_tracefs([sys.executable, "-c", DRIVER, str(N), _screen_file()])
    env = {**os.environ, "PYTHONPATH": REPO}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == {"SW": 0, "CS": 0}, out
    # Kernel mode counted without -K (a tracepoint fires in the kernel only).
    assert sorted(out["attrs"]) == [[1, False], [2, False]], out["attrs"]
    sw = out["delta"]["SW"]
    voluntary, preempted = out["switches"]
    assert voluntary == N, out  # one per blocking read, and nothing else blocked
    # Exactly the kernel's own count of this task's switches, preemptions included (the
    # driver woken on the child's CPU may preempt it).
    assert sw == voluntary + preempted, out
    assert sw == out["delta"]["CS"], out
    assert not out["messages"], out["messages"]


def _batch(cmd_prefix: list[str], screen: str, **kw: object) -> subprocess.CompletedProcess[str]:
    args = [*cmd_prefix, "-b", "-n", "1", "-d", "0.2", "-W", screen, "-S", "tp", "--", "true"]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, cwd="/tmp", **kw)  # type: ignore[call-overload]


@pytest.mark.usefixtures("root_only")
def test_tracefs_not_mounted_is_one_clear_line() -> None:
    env = {**os.environ, "PYTHONPATH": REPO}
    r = _batch(_with_tracefs(TIPTOP, mounted=False), _screen_file(), env=env)
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "sched:sched_switch" in line]
    assert said == [
        "tiptop: screen 'tp': tracepoint sched:sched_switch: tracefs not "
        "mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing; mount it with: "
        "mount -t tracefs nodev /sys/kernel/tracing"
    ], r.stderr
    assert "libpfm4" not in r.stderr


@pytest.mark.usefixtures("root_only")
def test_unprivileged_user_is_told_tracefs_is_root_only() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    cmd, env = nobody_command(["-m", "tiptop"])
    r = _batch(_with_tracefs(cmd), _screen_file(), env=env)
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "sched:sched_switch" in line]
    assert len(said) == 1, r.stderr
    assert said[0].startswith("tiptop: screen 'tp': tracepoint sched:sched_switch")
    assert "not readable by uid 65534 (root only); run as root" in said[0]
    lines = r.stdout.splitlines()
    (row,) = [line for line in lines if line.rstrip().endswith(("DEAD", "true"))]
    assert row.split()[1] == "?", r.stdout  # the tracepoint's cell


def test_list_events_says_msr_tsc_is_available() -> None:
    """--list-events used to open msr/tsc/ with exclude bits, which the msr PMU refuses
    (EINVAL) while a screen counted it; both open it alike now."""
    if not os.path.isdir("/sys/bus/event_source/devices/msr"):
        pytest.skip("no msr PMU here")
    r = subprocess.run(
        [*TIPTOP, "--list-events"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.strip().startswith("msr/tsc/")]
    assert line.split()[1] == "available", line
    assert "Tracepoints (name them subsystem:event" in r.stdout
