"""The self-test's measuring side: the kernel child, and counting it through tiptop's engine.

The counters take the live view's path: the screen is planned by ``engine.count.plan.Planner``
(resolve, probe on ourselves, pack into groups per PMU, the same attrs: user space only,
``inherit``, group reads), each group is opened on the child's pid and wrapped in an
``engine.count.units.Unit`` (its opening read is the base), and the counts come from
``engine.count.readout.read_units`` (deltas modulo 2**64, scaled by ``enabled / running`` when
multiplexed). Only the attachment moment differs from a refresh: the groups are opened while
the child sleeps in the kernel's first ``read`` and read once it sleeps in the last one
(``/proc/PID/stat`` state ``S``, proc(5)), so a run counts the kernel's body plus a fixed
handful of instructions.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tiptop.engine.count.plan import Planner, ScreenPlan
from tiptop.engine.count.readout import read_units
from tiptop.engine.count.units import Stores, Unit
from tiptop.errors import CounterError, TiptopError
from tiptop.kernel.backend import Backend
from tiptop.kernel.procfs import CLK_TCK
from tiptop.readonly import mutable

#: Seconds to wait for the child at any step (the emulated guest is ~100x slower).
WAIT_S = 120.0


class ChildError(TiptopError):
    """The kernel child could not start, was refused its code, or died."""


@mutable
class Run:
    """One kernel run: per alias, the scaled count and the group's Δtime_running; the child's
    CPU time (``/proc/PID/schedstat``, ns; nan when unreadable); aliases not opened here;
    per alias, the group's Δtime_enabled (running < enabled: multiplexed); the host's steal
    meanwhile (``steal_ns``)."""

    counts: np.ndarray
    running: np.ndarray
    cpu_ns: float
    failed: dict[int, str]
    enabled: np.ndarray | None = None
    steal_ns: float = 0.0


def steal_ns(path: str = "/proc/stat") -> float:
    """Time the host has stolen from this machine's CPUs so far, all CPUs, in ns (proc(5),
    ``/proc/stat`` "steal", in clock ticks: to 10 ms); 0 when unreadable."""
    try:
        with open(path) as f:
            return float(f.readline().split()[8]) * 1e9 / CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


class KernelChild:
    """``python3 -m tiptop.selftest.child``, started at once; a context manager.

    ``wrap`` is a command the child is started under (``perf stat ... --``), given
    ``pass_fds`` too; ``pid`` is then the child's own, as it says it."""

    def __init__(self, wrap: tuple[str, ...] = (), pass_fds: tuple[int, ...] = ()) -> None:
        self.go_r, self.go_w = os.pipe()
        self.done_r, self.done_w = os.pipe()
        root = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
        }
        # /proc/self/exe: this interpreter even when its path is not ours to reach (proc(5))
        exe = sys.executable if os.access(sys.executable, os.X_OK) else "/proc/self/exe"
        try:
            self.proc = subprocess.Popen(
                [*wrap, exe, "-m", "tiptop.selftest.child", str(self.go_r), str(self.done_w)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                pass_fds=(self.go_r, self.done_w, *pass_fds),
            )
        except OSError as e:
            for fd in (self.go_r, self.go_w, self.done_r, self.done_w):
                os.close(fd)
            raise ChildError(f"the kernel child could not start: {e.strerror or e}") from None
        os.close(self.go_r)
        os.close(self.done_w)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().split()
        if first[:1] != ["ok"]:
            self.close()
            said = " ".join(first).removeprefix("refused: ")
            raise ChildError(said or "the kernel child did not start")
        #: The child's pid (the counters' target).
        self.pid = int(first[1]) if len(first) > 1 else self.proc.pid

    def ask(self, kernel: str, n: int, ring: int | None = None) -> None:
        """Start ``kernel`` with ``n`` iterations (a chase over a ring of ``ring`` bytes);
        returns once it sleeps before its body."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{kernel} {n}{'' if ring is None else f' {ring}'}\n")
        self.proc.stdin.flush()
        self.expect()
        self.wait_sleeping()

    def go(self) -> None:
        """Wake the kernel (one byte on its pipe)."""
        os.write(self.go_w, b"g")

    def expect(self) -> None:
        """Wait for one byte from the kernel."""
        ready, _, _ = select.select([self.done_r], [], [], WAIT_S)
        if not ready or not os.read(self.done_r, 1):
            code = self.proc.poll()
            why = f"ended with status {code}" if code is not None else "did not answer"
            raise ChildError(f"the kernel child {why}")

    def wait_sleeping(self) -> None:
        """Wait until the child sleeps (state ``S``: it is blocked in its ``read``)."""
        end = time.monotonic() + WAIT_S
        while time.monotonic() < end:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            if state == b"S":
                return
            time.sleep(0.0002)
        raise ChildError("the kernel child never went to sleep")

    def cpu_ns(self) -> float:
        """The child's time on a CPU so far, in ns (``/proc/PID/schedstat``, first field)."""
        try:
            with open(f"/proc/{self.pid}/schedstat") as f:
                return float(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return float("nan")

    def close(self) -> None:
        """End the child and close the pipes."""
        for fd in (self.go_w, self.done_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> KernelChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def measure(
    child: KernelChild,
    kernel: str,
    n: int,
    splan: ScreenPlan,
    planner: Planner,
    backend: Backend,
    ring: int | None = None,
) -> Run:
    """Run ``kernel`` once with ``n`` iterations (a chase over ``ring`` bytes), every group
    of ``splan`` attached to the child by pid (see the module doc)."""
    plan = splan.plan
    child.ask(kernel, n, ring)
    cpu0, steal0 = child.cpu_ns(), steal_ns()
    units: list[Unit] = []
    stores = Stores(backend)
    failed: dict[int, str] = {}
    try:
        for g, gdef in enumerate(plan.groups):
            try:
                units.append(Unit(backend.open_group(child.pid, gdef.attrs), g, stores))
            except CounterError as e:
                for j in gdef.alias_index:
                    failed[int(j)] = planner.explain(e, plan.aliases[int(j)], gdef.pmu)
        child.go()
        if kernel == "pingpong":
            for _ in range(n):
                child.expect()
                child.go()
        child.expect()
        child.wait_sleeping()
        readout, errors = read_units(plan, [units])
        for _, unit, err in errors:
            for j in plan.groups[unit.gdef].alias_index:
                failed[int(j)] = f"read failed: {err.strerror or err}"
        cpu, steal = child.cpu_ns() - cpu0, steal_ns() - steal0
    finally:
        for u in units:
            u.close()
    child.go()  # out of the kernel's last read
    return Run(
        readout.total[0].copy(),
        readout.total_running[0].copy(),
        cpu,
        failed,
        readout.total_enabled[0].copy(),
        steal,
    )
