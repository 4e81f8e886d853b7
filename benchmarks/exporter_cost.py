"""What ``--textfile`` costs per refresh next to ``tiptop -b``, measured in the same run on
the same tasks (issue 37: "no dearer than batch").

    python3 benchmarks/exporter_cost.py [--sizes 2000,5000] [--repeats 5] [--before TREE]
        [--cgroups G]

For each size N it starts N sleeping processes (``procbench.start_tasks``) and runs,
alternated, ``tiptop -b -S sched -d 0.3 -n 14`` (output to a file) and ``tiptop --textfile F
-S sched -d 0.3 -n 14``. Each run's CPU is read while it runs (``/proc/PID/task/*/schedstat``,
``procbench.run_time_ns``) when its 3rd and its 13th refresh are done: for batch the 3rd
and 13th refresh printed (``procbench.Window``), for the textfile the 3rd and 13th file
written (a new inode each time); the cost of a refresh is the difference over those 10
refreshes, so start-up and exit stay outside. ``--serve`` without scrapes does the same
refresh as ``--textfile`` less the rendering and the write, so the textfile is the dearer
of the two. Medians over the repeats, with the load average. ``--before TREE`` (a checkout
of an older commit: ``git archive C | tar -x -C TREE``) adds that tree's ``--textfile``,
alternated with the rest.

``--cgroups G`` (root, cgroup v2; issue 48) puts the N processes into G cgroups made for
the run (round robin) and compares ``--textfile --by cgroup`` counting each task
(``--task-counters``) with counting each cgroup whole by the kernel's cgroup events (the
default as root), batch beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from procbench import REPO, Tasks, Window, raise_fd_limit, run_time_ns, start_tasks

#: The refreshes that open and close the window, the run's refreshes, and the delay.
FIRST, LAST, RUN, DELAY = 3, 13, "14", "0.3"


class TextfileWindow:
    """The child's run time when its textfile has been written ``FIRST`` and ``LAST``
    times (each write gives the file a new inode)."""

    def __init__(self, path: Path) -> None:
        self.path, self.inode, self.writes = path, 0, 0
        self.cpu: dict[int, int] = {}

    def poll(self, pid: int) -> None:
        """Count a new write; note the child's run time at the marks."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            return
        if inode != self.inode:
            self.inode, self.writes = inode, self.writes + 1
            if self.writes in (FIRST, LAST):
                self.cpu[self.writes] = run_time_ns(pid)

    def per_refresh_s(self) -> float | None:
        """CPU seconds a refresh inside the window."""
        if len(self.cpu) < 2:
            return None
        return (self.cpu[LAST] - self.cpu[FIRST]) / 1e9 / (LAST - FIRST)


def measure(argv: list[str], tree: Path, out: Path, textfile: Path | None) -> float | None:
    """CPU seconds a refresh of ``python -m tiptop argv`` from ``tree``, in the window."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if textfile is not None:
        textfile.unlink(missing_ok=True)
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            # -P: PYTHONPATH's tree, not the working directory's (see procbench.make_tools)
            [sys.executable, "-P", "-m", "tiptop", *argv, "-S", "sched", "-d", DELAY, "-n", RUN],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        window: Window | TextfileWindow = (
            Window(out, FIRST, LAST) if textfile is None else TextfileWindow(textfile)
        )
        while proc.poll() is None:
            window.poll(proc.pid)
            time.sleep(0.002)
    return window.per_refresh_s()


def into_cgroups(tasks: Tasks, groups: int) -> list[Path]:
    """The tasks' processes moved into ``groups`` new cgroups of the v2 hierarchy, round
    robin; the cgroups (removed by :func:`remove_cgroups` once the tasks are gone)."""
    sys.path.insert(0, str(REPO))
    from tiptop.kernel.cgroup import unified_root

    root = unified_root()
    if root is None or os.geteuid() != 0:
        raise SystemExit("--cgroups needs root and a cgroup v2 hierarchy")
    made = [Path(root) / f"tbwcg{os.getpid()}x{i}" for i in range(groups)]
    for d in made:
        d.mkdir()
    for i, proc in enumerate(tasks.procs):
        (made[i % groups] / "cgroup.procs").write_text(str(proc.pid))
    return made


def remove_cgroups(made: list[Path]) -> None:
    """Remove the cgroups :func:`into_cgroups` made (their tasks ended)."""
    for d in made:
        for _ in range(100):
            try:
                d.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; print one line per size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000,5000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", type=Path, help="an older tree: its --textfile too")
    ap.add_argument("--cgroups", type=int, default=0, help="the tasks in G cgroups (root)")
    args = ap.parse_args(argv)
    raise_fd_limit()
    with tempfile.TemporaryDirectory() as tmp:
        textfile = Path(tmp) / "tiptop.prom"
        tools: dict[str, tuple[list[str], Path, Path | None]] = {
            "batch": (["-b"], REPO, None),
            "textfile": (["--textfile", str(textfile)], REPO, textfile),
        }
        if args.before is not None:
            before = (["--textfile", str(textfile)], args.before.resolve(), textfile)
            tools["textfile-before"] = before
        if args.cgroups:
            by_cgroup = ["--textfile", str(textfile), "--by", "cgroup"]
            tools = {
                "batch": tools["batch"],
                "per-task": ([*by_cgroup, "--task-counters"], REPO, textfile),
                "cgroup-events": (by_cgroup, REPO, textfile),
            }
        for n in (int(s) for s in args.sizes.split(",")):
            tasks = start_tasks("processes", n, Path(tmp))
            made = into_cgroups(tasks, args.cgroups) if args.cgroups else []
            try:
                costs: dict[str, list[float]] = {name: [] for name in tools}
                for _ in range(args.repeats):
                    for name, (tool, tree, path) in tools.items():
                        cost = measure(tool, tree, Path(tmp) / "out.txt", path)
                        if cost is not None:
                            costs[name].append(cost)
            finally:
                tasks.close()
                remove_cgroups(made)
            med = {name: statistics.median(c) if c else float("nan") for name, c in costs.items()}
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            ratios = ", ".join(
                f"{name}/batch {med[name] / med['batch']:.2f}x" for name in med if name != "batch"
            )
            print(
                f"N={n}: ms of CPU a refresh (median, alternated): "
                + ", ".join(f"{name} {1e3 * v:.1f}" for name, v in med.items())
                + f"; {ratios}; load {load}",
                flush=True,
            )
            if args.cgroups:
                ratio = med["cgroup-events"] / med["per-task"]
                print(f"  {args.cgroups} cgroups: cgroup-events/per-task {ratio:.2f}x")
            for name, c in costs.items():
                print(f"  {name}: " + " ".join(f"{1e3 * v:.1f}" for v in c))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
