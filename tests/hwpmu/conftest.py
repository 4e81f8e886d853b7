"""Fixtures for the hwpmu tests: the known-count loop child, tolerances, and the figures report.

In the guest that ``tests/hwpmu/run.sh`` boots, ``TIPTOP_HWPMU_GUEST=1`` is set and QEMU's
``-icount shift=S`` makes user-mode instruction counts exact and cycles = instructions x 2^S
(``TIPTOP_HWPMU_ICOUNT_SHIFT``). Elsewhere (a machine with a real PMU) the same tests run with
the looser tolerances real hardware needs (interrupt skid, multiplexing edges).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pytest

if TYPE_CHECKING:
    from tiptop.frame import Frame
    from tiptop.screens.model import ScreenSpec

#: True inside the emulated-PMU guest, where counts are exact.
IN_GUEST = os.environ.get("TIPTOP_HWPMU_GUEST") == "1"
#: QEMU's -icount shift in the guest: the cycle counter advances 2^shift per instruction.
ICOUNT_SHIFT = int(os.environ.get("TIPTOP_HWPMU_ICOUNT_SHIFT", "0"))
#: Relative tolerance of slopes and scaled values on a real PMU.
REAL_PMU_RTOL = 0.01
#: Where the guest image puts the static loop binary (build-image.sh).
GUEST_KLOOP = "/usr/local/bin/tiptop-kloop"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares line through ``(xs, ys)``: ``(slope, intercept, max |residual|)``."""
    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    return float(slope), float(intercept), float(np.abs(resid).max())


@pytest.fixture(scope="session")
def kloop() -> Iterator[str]:
    """Path of the K-instruction loop program (kloop.c): the image's static build in the guest,
    else compiled here with the host's C compiler (skips when there is none). The directory is
    world-readable so that uid 65534 may run it too."""
    if IN_GUEST:
        assert os.access(GUEST_KLOOP, os.X_OK), f"{GUEST_KLOOP} missing from the guest image"
        yield GUEST_KLOOP
        return
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build tests/hwpmu/kloop.c")
    d = tempfile.mkdtemp(prefix="tiptop-hwpmu-")
    try:
        os.chmod(d, 0o755)
        out = os.path.join(d, "tiptop-kloop")
        subprocess.run([cc, "-O2", "-o", out, str(HERE / "kloop.c")], check=True, timeout=60)
        os.chmod(out, 0o755)
        yield out
    finally:
        shutil.rmtree(d, ignore_errors=True)


class LoopChild:
    """A ``kloop K N`` child: started blocked (it said "r"), so a monitor can attach by pid first.

    ``go()`` lets it run the loop; ``wait_done()`` waits for its "d" (it then blocks again, alive,
    so its counters can still be read); ``finish()`` lets it exit and reaps it.
    """

    def __init__(self, kloop: str, k: int, n: int, user: int | None = None) -> None:
        self.k, self.n = k, n
        self.proc = subprocess.Popen(
            [kloop, str(k), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            user=user,
            group=user,
            extra_groups=[] if user is not None else None,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        assert self.proc.stdout.read(1) == b"r", "kloop did not start"
        self.pid = self.proc.pid
        self._wait_blocked()

    def _wait_blocked(self) -> None:
        """Wait until the child sleeps in its read(0). Seeing its byte is not enough: it may not
        have reached the syscall yet, and the few instructions in between would be counted or
        not depending on scheduling (a real race, seen as +2 instructions in the guest)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{self.pid}/stat", encoding="ascii") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state == "S":  # interruptible sleep: the only one kloop has is read(0)
                return
            time.sleep(0.0005)
        raise AssertionError(f"kloop {self.pid} never blocked (state {state})")

    def go(self) -> None:
        """Release the loop."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"g")
        self.proc.stdin.flush()

    def wait_done(self) -> None:
        """Block until the loop has finished (the child is blocked again, still alive)."""
        assert self.proc.stdout is not None
        assert self.proc.stdout.read(1) == b"d", "kloop did not finish its loop"
        self._wait_blocked()

    def finish(self) -> None:
        """Let the child exit and reap it."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def kill(self) -> None:
        """Cleanup for failed tests: end this child (ours) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


class LoopMaker(Protocol):
    """The ``loop_children`` fixture: ``make(k, n, user=None)``."""

    def __call__(self, k: int, n: int, user: int | None = None) -> LoopChild: ...


@pytest.fixture
def loop_children(kloop: str) -> Iterator[LoopMaker]:
    """Factory ``make(k, n, user=None) -> LoopChild``; every child is ended after the test."""
    made: list[LoopChild] = []

    def make(k: int, n: int, user: int | None = None) -> LoopChild:
        c = LoopChild(kloop, k, n, user)
        made.append(c)
        return c

    yield make
    for c in made:
        c.kill()


def count_once(screen: ScreenSpec, child: LoopChild) -> tuple[Frame, int, list[str]]:
    """Count one ``kloop`` child by pid with a sampler of ``screen``, from its start to its
    end: (the frame, the child's row in it, the sampler's messages)."""
    import numpy as np

    from tiptop.engine import sampler as sampler_mod

    sampler = sampler_mod.Sampler(screen, sampler_mod.SamplerConfig(only_pid=child.pid))
    try:
        sampler.start()
        child.go()
        child.wait_done()
        frame = sampler.refresh()
        messages = sampler.messages.lines()
    finally:
        sampler.close()
        child.finish()
    (i,) = np.flatnonzero(frame.tid == child.pid)
    return frame, int(i), messages


@pytest.fixture(scope="session")
def report() -> Callable[[str], None]:
    """``report(line)``: print a measured figure, and append it to ``$TIPTOP_HWPMU_REPORT``
    (run.sh prints that file after the guest run; seen with ``pytest -s`` elsewhere)."""
    path = os.environ.get("TIPTOP_HWPMU_REPORT")
    where = "guest" if IN_GUEST else "host"

    def emit(line: str) -> None:
        text = f"{where}: {line}"
        print(text)
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(text + "\n")

    return emit


def tiptop_cmd(*args: str) -> list[str]:
    """The command line that runs this tree's tiptop (``python3 -m tiptop``)."""
    return ["python3", "-m", "tiptop", *args]


def tiptop_env() -> dict[str, str]:
    """Environment for a tiptop subprocess: this tree first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
