"""The known-answer kernels run for real: a pinned kernel child, and ``perf stat`` side by side.

``perf stat`` is given tiptop's plan spelled as ``-e`` groups
(``tests.support.known_answer.perf_events``), so perf opens what tiptop opens, grouped as
tiptop groups it. The kernel child is
started under ``perf stat -D -1 --control fd:CTL,ACK`` (perf-stat(1): counters start disabled;
``enable``/``disable`` on CTL, each answered ``ack`` on ACK): they are enabled while the child
sleeps before the kernel's body and disabled once it sleeps after it, the window tiptop's own
count covers (``tiptop.selftest.measure``). One perf run per size; the slopes are compared.

The functions here start processes: system tests only.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile

from tests.support.known_answer import parse_csv
from tiptop.selftest.measure import KernelChild

#: Seconds to wait for perf's acknowledgement of a control command.
ACK_WAIT_S = 30.0


def perf_problem(perf: str | None = None) -> str | None:
    """Why ``perf stat`` cannot be used here, or None (a software event counts ``true``)."""
    perf = perf or shutil.which("perf")
    if perf is None:
        return "no perf binary on PATH (Debian: linux-perf)"
    try:
        r = subprocess.run(
            [perf, "stat", "-x,", "-e", "task-clock", "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError as e:
        return f"{perf} does not run: {e.strerror or e}"
    values = parse_csv(r.stderr)
    if r.returncode != 0 or not values or isinstance(values[0], str):
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return f"perf stat does not count here (exit {r.returncode}): {last}"
    return None


def _command(ctl_w: int, ack_r: int, what: bytes) -> None:
    """Send ``what`` on perf's control fd and wait for its ``ack``."""
    os.write(ctl_w, what + b"\n")
    ready, _, _ = select.select([ack_r], [], [], ACK_WAIT_S)
    assert ready and os.read(ack_r, 16).startswith(b"ack"), f"perf did not ack {what!r}"


def perf_count(
    events: str, kernel: str, n: int, cpu: int | None, ring: int | None = None
) -> list[float | str]:
    """Run ``kernel`` once with ``n`` iterations under ``perf stat -e events``, counted only
    from its start to its end (see the module doc); perf's values in ``events`` order."""
    perf = shutil.which("perf")
    assert perf is not None
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    fd, out = tempfile.mkstemp(prefix="tiptop-perfstat-")
    os.close(fd)
    wrap = (
        perf,
        "stat",
        "-x,",
        "-o",
        out,
        "-D",
        "-1",
        "--control",
        f"fd:{ctl_r},{ack_w}",
        "-e",
        events,
        "--",
    )
    try:
        with pinned_child(cpu, wrap=wrap, pass_fds=(ctl_r, ack_w)) as child:
            os.close(ctl_r)
            os.close(ack_w)
            ctl_r = ack_w = -1
            child.ask(kernel, n, ring)
            _command(ctl_w, ack_r, b"enable")
            child.go()
            for _ in range(n if kernel == "pingpong" else 0):  # as measure() answers it
                child.expect()
                child.go()
            child.expect()
            child.wait_sleeping()
            _command(ctl_w, ack_r, b"disable")
            child.go()
        with open(out) as f:
            return parse_csv(f.read())
    finally:
        for x in (ctl_r, ctl_w, ack_r, ack_w):
            if x >= 0:
                os.close(x)
        os.unlink(out)


def pinned_child(cpu: int | None, **kw: object) -> KernelChild:
    """A :class:`KernelChild` pinned to ``cpu`` (sched_setaffinity(2)): the whole series runs
    on one core, none of it moved mid-run."""
    child = KernelChild(**kw)  # type: ignore[arg-type]
    if cpu is not None:
        os.sched_setaffinity(child.pid, {cpu})
    return child
