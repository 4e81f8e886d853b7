"""``--record`` cost: bytes per task per refresh (gzip), write time per task, and the time a
replay takes to open, for N tasks over R refreshes of the 5-counter ``default`` screen shape.

    python3 benchmarks/record_size.py [--tasks 500] [--refreshes 300] [--busy 0.1,1.0]

Frames are synthetic but shaped like the sampler's (``tiptop.engine.assemble``): a fraction
``busy`` of the tasks ran in each 1 s interval (%CPU from clock ticks over a measured
interval, counter deltas of 1e5..1e9 and growing totals), the others did not (zeros). The
size of one hour (3600 refreshes) is extrapolated linearly from R refreshes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tiptop import recording
from tiptop.cells import STATUS_DTYPE
from tiptop.frame import Frame
from tiptop.screens import Target, builtin_screens


def make_frame(rng: np.random.Generator, it: int, n: int, busy: float, totals: np.ndarray) -> Frame:
    """One refresh of ``n`` tasks, a fraction ``busy`` of which ran."""
    k = totals.shape[1]
    interval = 1.0 + rng.uniform(0, 0.002)
    ran = rng.random(n) < busy
    ticks = np.where(ran, rng.integers(1, 101, n), 0)
    cpu = 100.0 * ticks / interval
    user = cpu * rng.integers(0, 11, n) / 10
    delta = np.where(ran[:, None], rng.integers(10**5, 10**9, (n, k)), 0).astype(np.float64)
    totals += delta
    z = np.zeros((n, k), STATUS_DTYPE)
    return Frame(
        iteration=it,
        timestamp=1.7e9 + it + rng.uniform(0, 0.01),
        interval=interval,
        threads=False,
        headers=(),
        counters=("CYCLE", "INSN", "MISS", "BR", "BUS")[:k],
        tid=np.arange(1000, 1000 + n),
        pid=np.arange(1000, 1000 + n),
        marker=[" "] * n,
        user=["root"] * n,
        name=[f"task{i % 50}" for i in range(n)],
        cmdline=[f"/usr/bin/task{i % 50} --serve --port {8000 + i}" for i in range(n)],
        num_threads=np.ones(n, np.int64),
        dead=np.zeros(n, bool),
        cpu_total=cpu,
        values=np.zeros((n, 0)),
        status=np.zeros((n, 0), STATUS_DTYPE),
        running=np.ones((n, 0)),
        node=np.zeros((n, 0), np.int16),
        counter_delta=delta,
        counter_running=np.ones((n, k)),
        counter_status=z,
        cpu_user=user,
        cpu_sys=cpu - user,
        processor=rng.integers(0, 64, n).astype(float),
        cpu_status=np.zeros((n, 2), STATUS_DTYPE),
        counter_scaled=delta.copy(),
        counter_total=totals.copy(),
        counter_total_status=z,
        time_percent=np.full((n, 4), np.nan),
        time_status=np.full((n, 4), 3, STATUS_DTYPE),
        time_threads=np.ones(n),
        cpu_limit=np.full(n, np.nan),
        cpus_allowed=np.full(n, np.nan),
        tasks_total=n,
    )


def measure(n: int, refreshes: int, busy: float) -> None:
    """Record, then open the recording; print the figures."""
    (screen,) = [s for s in builtin_screens(Target()) if s.name == "default"]
    rng = np.random.default_rng(1)
    totals = np.zeros((n, 5))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.jsonl.gz")
        rec = recording.Recorder(path, {"interval": 1.0})
        write_s = 0.0
        for it in range(refreshes):
            f = make_frame(rng, it, n, busy, totals)
            t0 = time.process_time()
            rec.write(f, screen)
            write_s += time.process_time() - t0
        rec.close()
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        loaded = recording.load(path)
        src = recording.ReplaySource(loaded, loaded.screens[0])
        src.frame(0)
        open_s = time.perf_counter() - t0
    per = size / (n * refreshes)
    hour = per * n * 3600
    print(
        f"tasks {n:5d} busy {busy:4.0%}: {per:6.1f} B/task/refresh gzipped, "
        f"{1e6 * write_s / (n * refreshes):5.1f} us/task to write; "
        f"1 h = {hour / 1e6:6.1f} MB; open {refreshes} refreshes: {open_s:.2f} s "
        f"(1 h: ~{open_s * 3600 / refreshes:.1f} s)"
    )


def main() -> None:
    """Parse the arguments and measure each busy fraction."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--refreshes", type=int, default=300)
    ap.add_argument("--busy", default="0.1,1.0")
    a = ap.parse_args()
    for busy in (float(b) for b in a.busy.split(",")):
        measure(a.tasks, a.refreshes, busy)


if __name__ == "__main__":
    main()
