"""Run this tree's ``tiptop -b`` around loop children: attach first, then let the loops run.

"tiptop has attached" is read from its output, not guessed: the sampler opens every task's
groups in ``start()`` (tiptop/sampler.py), and batch mode prints iteration 0 one delay after
``start()`` (tiptop/batch.py, no primer iteration), so once iteration 0 is on the pipe every
loop child found at start-up is counted. Only then are the children released; they are
blocked in read(0) during iteration 0 (kloop.c), so their instructions all fall in the later
iterations, and iteration 0 shows them with 0 user-mode instructions. (The former rule,
"perf fd count unchanged for 0.3 s", could fire while tiptop was still probing or opening,
and a loop released then ran uncounted: ``own INSN=0`` seen once.)

Exact counts also need the PMU to ourselves. Another monitor counting the same tasks (a
second tiptop over all tasks, ``perf``) takes hardware counters, our groups are multiplexed
(time_running < time_enabled, perf_event_open(2)), and a loop of a few ms may run entirely
between two rotations (``perf_event_mux_interval_ms``) and be counted 0 times: reproduced
here with a background ``tiptop -b -H``, which gave ``own INSN=0`` and raw deltas at 20-70 %
of the truth. :func:`run_counted` therefore retries a run that met another monitor and skips
(on a host; fails in the guest, where nothing else runs) when every try met one.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO

import pytest

from tests.hwpmu.conftest import IN_GUEST, LoopChild, tiptop_cmd, tiptop_env

#: How many times :func:`run_counted` tries before it gives up on a shared PMU.
TRIES = 3


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


def other_monitors(own: int) -> list[int]:
    """Pids other than ``own`` holding perf_event fds: monitors that may take the PMU's
    counters from ours (conservative: one counting other tasks only is listed too)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (own, os.getpid()) and perf_fds(int(name)):
            pids.append(int(name))
    return pids


def multiplexed(out: str, pids: Sequence[int]) -> bool:
    """True when JSON batch output shows a counter of ``pids`` running only part of an
    interval (``running`` < 1: its group was multiplexed). False for other formats."""
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec["pid"] in pids and any(
            c["running"] is not None and c["running"] < 1 for c in rec["counters"].values()
        ):
            return True
    return False


def first_iteration_printed(out: str) -> bool:
    """True once ``out`` (batch stdout so far) holds iteration 0: a JSON record, or a
    complete row line under the text header (the preamble and header come before
    ``start()``). Only complete lines count; batch mode flushes after each iteration."""
    lines = out[: out.rfind("\n") + 1].splitlines()
    if any(line.startswith("{") for line in lines):
        return True
    hdr = next((i for i, line in enumerate(lines) if "PID" in line and "COMMAND" in line), None)
    return hdr is not None and any(line.strip() for line in lines[hdr + 1 :])


def _iterations(args: Sequence[str]) -> int:
    """The ``-n`` value in ``args`` (0 when absent)."""
    for i, a in enumerate(args[:-1]):
        if a in ("-n", "--max-iter"):
            return int(args[i + 1])
    return 0


class _Drain(threading.Thread):
    """Reads a pipe to its end into ``text``; ``changed`` is set after each chunk."""

    def __init__(self, pipe: IO[str]) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.chunks: list[str] = []
        self.changed = threading.Event()

    def run(self) -> None:
        while chunk := self.pipe.readline():
            self.chunks.append(chunk)
            self.changed.set()
        self.changed.set()

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def run_counted(
    make_children: Callable[[], Sequence[LoopChild]],
    args: Callable[[Sequence[LoopChild]], Sequence[str]],
    *,
    user: int | None = None,
    min_fds: int = 1,
) -> tuple[Sequence[LoopChild], str, str]:
    """:func:`run_around` with the PMU to ourselves: up to :data:`TRIES` runs, each with
    fresh children (``make_children()``) and arguments (``args(children)``), until one met
    no other monitor. Returns (children, stdout, stderr) of that run. When every try met
    one: skips on a host, fails in the guest."""
    seen: list[int] = []
    for _ in range(TRIES):
        children = make_children()
        out, err, others = run_around(children, args(children), user=user, min_fds=min_fds)
        if not others and not multiplexed(out, [c.pid for c in children]):
            return children, out, err
        seen = others
    why = (
        f"the PMU was shared with another monitor in {TRIES} tries "
        f"(perf fds held by pids {seen or '?'}; our groups multiplexed): exact counts "
        "need it alone"
    )
    assert not IN_GUEST, why
    pytest.skip(why)


def run_around(
    children: Sequence[LoopChild],
    args: Sequence[str],
    *,
    user: int | None = None,
    min_fds: int = 1,
    timeout: float = 240,
) -> tuple[str, str, list[int]]:
    """Start ``tiptop ARGS`` (as ``user``), wait until it printed iteration 0 (and so
    attached: it then holds >= ``min_fds`` perf fds, asserted), release every child, wait
    for the loops, then for tiptop to end. ARGS must bound it with ``-n`` >= 2: iteration 0
    comes before the release, the loops run in the later ones. Returns (stdout, stderr,
    pids of other processes that held perf fds while the loops ran); asserts exit status 0."""
    assert _iterations(args) >= 2, f"run_around needs -n >= 2 in {list(args)}"
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
    assert p.stdout is not None and p.stderr is not None
    out, err = _Drain(p.stdout), _Drain(p.stderr)
    out.start()
    err.start()
    try:
        deadline = time.monotonic() + timeout
        while not first_iteration_printed(out.text):
            if not out.is_alive():
                p.wait(timeout=timeout)
                err.join(timeout=timeout)
                raise AssertionError(
                    f"tiptop ended before its first iteration (rc {p.returncode}): {err.text}"
                )
            assert time.monotonic() < deadline, f"tiptop printed no iteration: {out.text}"
            out.changed.wait(0.5)
            out.changed.clear()
        n = perf_fds(p.pid)
        assert n >= min_fds, f"tiptop printed iteration 0 holding {n} perf fds (< {min_fds})"
        others = set(other_monitors(p.pid))
        for c in children:
            c.go()
        for c in children:
            c.wait_done()
        others.update(other_monitors(p.pid))
        p.wait(timeout=timeout)
        out.join(timeout=timeout)
        err.join(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for c in children:
            c.finish()
    assert p.returncode == 0, f"tiptop exit {p.returncode}: {err.text}"
    return out.text, err.text, sorted(others)
