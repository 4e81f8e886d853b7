"""A sampler over the scripted fake backend and a fake /proc tree (tests/fakeproc.py):
the screen the unit tests of the sampler count with, and how they build and read one."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np

from tests.fakeproc import FakeProc
from tests.support import host_at
from tests.support.builders import screen
from tests.support.fake_backend import FakeBackend
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.frame import Frame
from tiptop.host import Clock, fd_reserve
from tiptop.screens import Target, builtin_screens

CY, IN, PF = (0, 0), (0, 1), (1, 2)  # cycles, instructions, page-faults (type, config)

#: Three counters (two hardware, one software) and five columns: %CPU, a delta, a ratio,
#: a software delta and an absolute count.
FAKE_SCREEN = screen(
    "t",
    "test",
    counters={"C": CY, "I": IN, "F": PF},
    columns=[
        (" %CPU", "%5.1f", "CPU_TOT"),
        ("  Mcyc", "%6.2f", "delta(C)/1e6"),
        (" IPC", "%4.2f", "delta(I)/delta(C)"),
        ("  flt", "%5.0f", "delta(F)"),
        ("  tot", "%5.0f", "C"),
    ],
)

#: A fake /proc tree and a fake backend (the ``env`` fixture of tests/unit/conftest.py).
FakeEnv = tuple[FakeProc, FakeBackend]


def fake_env(tmp_path: Path) -> FakeEnv:
    """An empty fake /proc under ``tmp_path`` and a fresh fake backend."""
    return FakeProc(tmp_path / "proc"), FakeBackend()


def make(env: FakeEnv, fd_budget: int | None = None, **cfg: object) -> Sampler:
    """A sampler of the fake tree; ``fd_budget`` fds for counters when given (a host whose
    limit and fds in use leave exactly that after the reserve)."""
    fp, b = env
    limit = {}
    if fd_budget is not None:  # a big limit, and as many fds in use as leave that budget
        soft = 100_000
        limit = {"fd_soft": soft, "fds_in_use": soft - fd_reserve(soft) - fd_budget}
    host = host_at(str(fp.root), str(fp.root.parent / "nosys"), **limit)
    return Sampler(FAKE_SCREEN, SamplerConfig(**cfg), backend=b, host=host)  # type: ignore[arg-type]


def row(frame: Frame, tid: int) -> int:
    """The index of ``tid``'s row in ``frame`` (there must be exactly one)."""
    (i,) = np.flatnonzero(frame.tid == tid)
    return int(i)


#: The default screen's events on the fake backend (type, config); bus-cycles is BUS.
CYCLES, INSN, MISSES, BMISS, BUS = (0, 0), (0, 1), (0, 3), (0, 5), (0, 6)


def default_screen_sampler(
    tmp_path: Path, compute: tuple[float, float, float, float]
) -> tuple[FakeProc, FakeBackend, Sampler]:
    """The fake /proc, the fake backend and a sampler of the built-in ``default`` screen
    over three processes: ``compute``
    (cycles, instructions, cache misses and branch misses per second as given), ``server``
    (two threads, 1e8 cycles/s each, 5e7 and 1.5e8 instructions/s) and ``idle``; bus-cycles
    fails with ENOENT. The engine's clock (``Host.clock``) is the fake backend's."""
    fp, b = fake_env(tmp_path)
    fp.add(100, "compute", processor=1)
    fp.add(300, "server", tids=(301,))
    fp.add(400, "idle")
    for ev, rate in zip((CYCLES, INSN, MISSES, BMISS), compute, strict=True):
        b.script(100, ev, rate)
    for tid, insn in ((300, 5e7), (301, 1.5e8)):
        b.script(tid, CYCLES, 1e8)
        b.script(tid, INSN, insn)
    b.event_errors[BUS] = errno.ENOENT
    (default,) = [s for s in builtin_screens(Target()) if s.name == "default"]
    host = host_at(str(fp.root), str(tmp_path / "nosys"), clock=Clock(monotonic=b.clock))
    return fp, b, Sampler(default, SamplerConfig(), backend=b, host=host)
