"""CPU cost of one sampler refresh per task, with a 4-event SOFTWARE screen.

Starts N sleeping tasks itself (threads of one helper process for the ``threads`` mode,
i.e. ``-H`` rows; copies of sleep(1) for the ``processes`` mode), attaches a Sampler to
them, and reports the CPU time (``time.process_time``: user + system of this process) one
``refresh()`` takes, divided by N. Target: below 20 us per task at 1000 tasks.

    python3 benchmarks/refresh_cost.py [--sizes 100,1000,5000] [--refreshes 20]
        [--modes threads,processes] [--screen sw|mux] [--profile]

``--screen mux`` uses 10 ``instructions`` counters instead (needs a hardware PMU): more
events than a PMU has counters, so the binder splits them into several multiplexed groups
and each task costs one read per group.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from procbench import THREADS_CHILD  # the same sleeping-threads child as whole_process

from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec

SCREEN = ScreenSpec(
    "bench",
    "4 software events",
    counters=tuple(
        CounterSpec(a, NamedEvent(e), e)
        for a, e in (
            ("TC", "task-clock"),
            ("PF", "page-faults"),
            ("CS", "context-switches"),
            ("MIG", "cpu-migrations"),
        )
    ),
    columns=(
        ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"),
        ColumnSpec("   P", " %3.0f", "PROC_ID"),
        ColumnSpec("  Mclk", "%6.2f", "delta(TC)/1e6"),
        ColumnSpec("  flt/s", "%7.1f", "delta(PF)/INTERVAL"),
        ColumnSpec("   cs", "%5.0f", "delta(CS)"),
        ColumnSpec("  mig", "%5.0f", "delta(MIG)"),
        ColumnSpec(" cs/ms", "%6.2f", "delta(CS)/(delta(TC)/1e6)"),
    ),
)

MUX_SCREEN = ScreenSpec(
    "mux",
    "10 hardware events, split into multiplexed groups",
    counters=tuple(CounterSpec(f"I{i}", NamedEvent("instructions"), "instr") for i in range(10)),
    columns=tuple(ColumnSpec(f"{'I' + str(i):>6}", "%6.0f", f"delta(I{i})") for i in range(10)),
)


def start_threads(n: int) -> tuple[list[subprocess.Popen[str]], SamplerConfig]:
    """One process with ``n`` threads (main included), watched with -H."""
    p = subprocess.Popen(
        [sys.executable, "-c", THREADS_CHILD, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return [p], SamplerConfig(threads=True, only_pid=p.pid)


def start_processes(n: int, tmp: str) -> tuple[list[subprocess.Popen[str]], SamplerConfig]:
    """``n`` sleeping processes under a unique name, watched as process rows."""
    name = f"tbs{os.getpid() % 100000}"
    exe = os.path.join(tmp, name)
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    procs = [subprocess.Popen([exe, "600"]) for _ in range(n)]
    return procs, SamplerConfig(only_name=name)  # type: ignore[return-value]


def measure(
    cfg: SamplerConfig, refreshes: int, profile: bool, screen: ScreenSpec = SCREEN
) -> tuple[int, float, int]:
    """(rows, CPU seconds per refresh, fds) for ``refreshes`` refreshes."""
    s = Sampler(screen, cfg)
    if len(s.plan.groups) > 1:
        print(f"  ({screen.name}: {[len(g.attrs) for g in s.plan.groups]} events per group)")
    try:
        s.start()
        s.refresh()
        prof = cProfile.Profile() if profile else None
        t0 = time.process_time()
        if prof:
            prof.enable()
        for _ in range(refreshes):
            f = s.refresh()
        if prof:
            prof.disable()
        cpu = (time.process_time() - t0) / refreshes
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
        return len(f), cpu, s.fds_used
    finally:
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--modes", default="threads,processes")
    ap.add_argument("--screen", choices=("sw", "mux"), default="sw")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:  # 5000 tasks x 4 events need 20000 fds; root may raise the hard limit
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, 40000), max(hard, 40000)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"RLIMIT_NOFILE: {resource.getrlimit(resource.RLIMIT_NOFILE)}")
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"{'mode':<10} {'tasks':>6} {'rows':>6} {'fds':>6} {'ms/refresh':>11} {'us/task':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            for n in sizes:
                procs, cfg = start_threads(n) if mode == "threads" else start_processes(n, tmp)
                try:
                    time.sleep(0.2)
                    screen = MUX_SCREEN if args.screen == "mux" else SCREEN
                    rows, cpu, fds = measure(cfg, args.refreshes, args.profile, screen)
                finally:
                    for p in procs:
                        p.kill()
                    for p in procs:
                        p.wait()
                print(
                    f"{mode:<10} {n:>6} {rows:>6} {fds:>6} {cpu * 1e3:>11.2f} "
                    f"{cpu / max(rows, 1) * 1e6:>8.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
