"""What tiptop costs a user, next to the C original, measured in the same run on the same tasks.

    python3 benchmarks/whole_process.py [--sizes 100,500,2000,5000] [--modes processes,threads]
        [--parts batch,live,startup,idle] [--quick] [--no-c] [--filter] [--before TREE]

For each size N it starts N sleeping processes (or one process with N threads, shown with
``-H``) and measures the tools, alternated, on those tasks plus whatever else runs here
(``--before TREE``: ours from an older checkout too, a third tool, for before/after
figures taken side by side):

* batch: CPU of the whole ``tiptop -b -i`` process per refresh, read while a ``-n 3+K``
  run runs: its CPU between the output showing refresh 3 printed and showing refresh
  2+K printed, over those K-1 refreshes, so that start-up and exit stay outside (K =
  25000 / N within 20..50); median of 5, each tool's range and the range of ours/C
  over the repeats (a repeat's runs follow each other) printed under the row; peak RSS
  (VmHWM);
* live: the tool in a 200x50 tmux terminal, CPU between two screen updates over the
  refreshes counted in between;
* start-up: CPU of a whole ``tiptop -b -n 1`` (median of 5), with 200 sleeping processes;
  under it, "py + deps": the CPU of ``python3 -c "import numpy, _cffi_backend"``, what
  ours pays before its own code on this machine, run in the same rotation as the tools,
  and "- floor": the median over the rounds of ours less the floor of the same round;
* idle: CPU % of one core of the live tool at ``-d 5`` with 200 sleeping processes.

Both tools show their default screen (5 hardware events per task: cycles, instructions,
cache misses, branch misses, bus cycles); on a machine without a hardware PMU the preload
shim ``hw2sw.c`` maps them to 5 software events, for both. The C original is the Debian
package ``tiptop`` (installed here with apt-get when missing and running as root). Both get
the same RLIMIT_NOFILE (the soft limit raised to the hard one); the ``counted`` column says
how many rows of the last refresh had all their counters, per tool.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from livebench import (
    FLOOR,
    LiveResult,
    StartUp,
    Tmux,
    floor_tool,
    measure_idle,
    measure_live,
    measure_startup,
)
from procbench import (
    REPO,
    BatchResult,
    Tool,
    build_shim,
    ensure_c_tiptop,
    make_tools,
    measure_batch,
    raise_fd_limit,
    start_tasks,
    system_tasks,
)


@dataclass(frozen=True)
class Target:
    """A goal: ``value <= limit``, the value being ours/C or ours alone."""

    text: str
    limit: float
    on_ratio: bool = True


HALF = Target("<= 0.5x C", 0.5)
#: Issue 53's goals for batch: 0.3x at 2000 and 5000 processes, 0.35x for -H.
THREE_TENTHS = Target("<= 0.3x C", 0.3)
THREADS = Target("<= 0.35x C", 0.35)
#: (part, mode, N) -> target (issue 10's, made stricter by issue 53 for batch)
TARGETS = {
    ("batch", "processes", 500): HALF,
    ("batch", "processes", 2000): THREE_TENTHS,
    ("batch", "processes", 5000): THREE_TENTHS,
    ("batch", "threads", 2000): THREADS,
    ("batch", "threads", 5000): THREADS,
    ("live", "processes", 2000): HALF,
    ("RSS", "processes", 5000): Target("< 60 MB", 60, False),
    ("RSS", "threads", 5000): Target("< 60 MB", 60, False),
}
STARTUP = Target("< 150 ms CPU", 150, False)
#: Issue 53's: ours less the floor (``py + deps``) of the same round.
ABOVE_FLOOR = Target("<= + 60 ms CPU", 60, False)
IDLE = Target("< 0.05% core", 0.05, False)


@dataclass
class Settings:
    """How long and how often to measure (``--quick`` shortens everything)."""

    short: int = 3  # refreshes before the measured window (start-up and discovery)
    spread: int = 25000  # the run has short + spread // N refreshes more, clamped:
    extra: tuple[int, int] = (20, 50)
    repeats: int = 5
    delay: float = 0.1
    live_delay: float = 0.5
    live_seconds: float = 10.0
    idle_tasks: int = 200
    idle_seconds: float = 30.0
    startup_repeats: int = 5

    def long(self, n: int) -> int:
        """Refreshes of the batch run with ``n`` tasks: enough for the window's CPU to
        dwarf the error of reading it at two marks."""
        lo, hi = self.extra
        return self.short + max(lo, min(hi, self.spread // max(n, 1)))


QUICK = Settings(1, 6000, (5, 40), 1, 0.05, 0.3, 3.0, 200, 10.0, 2)


@dataclass
class Row:
    """One line of the table."""

    what: str
    n: str
    tasks: str
    counted: str
    ours: str
    c: str
    ratio: str
    target: str
    check: str


HEAD = Row("what", "N", "tasks", "counted ours / C", "ours", "C", "ours/C", "target", "")


def print_row(row: Row) -> None:
    """One markdown table line (the head also prints its rule)."""
    cells = list(vars(row).values())
    widths = (13, 5, 6, 23, 14, 14, 7, 13, 6)
    print(
        "| " + " | ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)) + " |",
        flush=True,
    )
    if row is HEAD:
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def emit(rows: list[Row]) -> list[Row]:
    """Print ``rows``; the same rows."""
    for row in rows:
        print_row(row)
    return rows


def compare(
    what: str, n: int, tasks: str, res: dict[str, float | str], unit: str, target: Target | None
) -> Row:
    """A row with ours, C, their ratio and the target check; notes for failed tools."""
    for label, x in res.items():
        if isinstance(x, str):
            print(f"  ({what} {n}: {label}: {x})")
    ours, c = (x if isinstance(x, float) else None for x in (res.get("ours"), res.get("C")))
    ratio = ours / c if ours is not None and c else None
    value = ratio if target is None or target.on_ratio else ours
    check = "" if target is None else "n/a" if value is None else "misses"
    if target and value is not None and value <= target.limit:
        check = "meets"
    digits = 3 if unit == "% core" else 0 if unit.endswith("CPU") else 2 if unit == "ms" else 1
    return Row(
        what,
        str(n),
        tasks,
        "",
        "n/a" if ours is None else f"{ours:.{digits}f} {unit}",
        "n/a" if c is None else f"{c:.{digits}f} {unit}",
        "n/a" if ratio is None else f"{ratio:.2f}",
        target.text if target else "",
        check,
    )


def with_before(
    what: str, n: int, tasks: str, res: dict[str, float | str], unit: str, target: Target | None
) -> list[Row]:
    """:func:`compare`'s row, and under it the same for ours from ``--before``'s tree."""
    rows = [compare(what, n, tasks, res, unit, target)]
    if "before" in res:
        before = {"ours": res["before"], **({"C": res["C"]} if "C" in res else {})}
        rows.append(compare(what + " (before)", n, tasks, before, unit, target))
    return rows


def startup_rows(n: int, tasks: str, st: StartUp) -> list[Row]:
    """The start-up rows: each tool's median, the floor's (what ours pays before its own
    code: below it, no target can be met here), and ours (and before) above the floor."""
    labels = [label for label in ("ours", "C", "before") if st.rounds and label in st.rounds[0]]
    medians = {label: st.median(label) for label in [*labels, *st.errors]}
    rows = with_before("start-up", n, tasks, medians, "ms CPU", STARTUP)
    rows.append(compare("  py + deps", n, "", {"ours": st.median(FLOOR)}, "ms CPU", None))
    for label in ("ours", "before"):
        if label in medians:
            above = {"ours": st.above_floor(label)}
            rows.append(compare(f"  {label} - floor", n, "", above, "ms CPU", ABOVE_FLOOR))
    return rows


def spread(what: str, n: int, res: dict[str, BatchResult | str]) -> None:
    """Print each tool's range of CPU per refresh over the repeats, and the range of each
    of ours against the C original's run of the same repeat (one after the other)."""
    runs = {k: x.samples for k, x in res.items() if isinstance(x, BatchResult)}
    parts = [f"{k} {min(xs) * 1e3:.2f}-{max(xs) * 1e3:.2f} ms" for k, xs in runs.items()]
    c = runs.get("C")
    for k in ("ours", "before"):
        if c and k in runs and len(runs[k]) == len(c):
            ratios = [x / y for x, y in zip(runs[k], c, strict=True)]
            parts.append(f"{k}/C {min(ratios):.2f}-{max(ratios):.2f}")
    print(
        f"  ({what} {n}, over {max(map(len, runs.values()), default=0)} repeats: "
        + ", ".join(parts)
        + ")"
    )


def batch_rows(mode: str, n: int, tasks: int, res: dict[str, BatchResult | str]) -> list[Row]:
    """The batch CPU-per-refresh row and the peak RSS row for one size (each with its
    ``--before`` row)."""
    h = " -H" if mode == "threads" else ""
    ms = {k: x.ms if isinstance(x, BatchResult) else x for k, x in res.items()}
    rows = with_before("batch" + h, n, str(tasks), ms, "ms", TARGETS.get(("batch", mode, n)))
    for row, label in zip(rows, ("ours", "before"), strict=False):
        row.counted = " / ".join(
            f"{x.counted}/{x.rows}" if isinstance(x, BatchResult) else "-"
            for x in (res.get(label), res.get("C"))
        )
    for label, x in res.items():
        for crash in x.crashes if isinstance(x, BatchResult) else []:
            print(f"  (batch{h} {n}: {label} failed, run again: {crash})")
    spread("batch" + h, n, res)
    rss: dict[str, float | str] = {
        k: x.rss_mb for k, x in res.items() if isinstance(x, BatchResult)
    }
    return rows + with_before("  peak RSS" + h, n, "", rss, "MB", TARGETS.get(("RSS", mode, n)))


def live_rows(mode: str, n: int, tasks: int, res: dict[str, LiveResult | str]) -> list[Row]:
    """The live CPU-per-refresh row for one size (and its ``--before`` row)."""
    ms = {k: x.ms if isinstance(x, LiveResult) else x for k, x in res.items()}
    what = "live" + (" -H" if mode == "threads" else "")
    return with_before(what, n, str(tasks), ms, "ms", TARGETS.get(("live", mode, n)))


def live_retry(tmux: Tmux, tool: Tool, args: list[str], seconds: float) -> LiveResult | str:
    """``measure_live``, tried a second time (saying why) when the first try failed."""
    res = measure_live(tmux, tool, args, seconds)
    if isinstance(res, str):
        print(f"  (live {' '.join(args)}: {tool.label} failed, trying again: {res})")
        res = measure_live(tmux, tool, args, seconds)
    return res


@dataclass
class Bench:
    """What every measurement needs: the tools, the parts asked for, the settings, a scratch
    directory, the tmux server and whether to restrict both tools to the bench's tasks."""

    tools: list[Tool]
    floor: Tool
    parts: set[str]
    s: Settings
    tmp: Path
    tmux: Tmux
    use_filter: bool


def run_size(b: Bench, mode: str, n: int) -> list[Row]:
    """Start ``n`` tasks of ``mode``, measure the parts asked for, kill the tasks."""
    tasks = start_tasks(mode, n, b.tmp)
    rows: list[Row] = []
    try:
        time.sleep(0.5)
        common = ["-H"] if mode == "threads" else []
        common += ["-p", tasks.pattern] if b.use_filter else []
        seen = n if b.use_filter else system_tasks(mode == "threads")
        if "batch" in b.parts:
            args = ["-b", "-i", "-d", str(b.s.delay), *common]
            res = measure_batch(b.tools, args, b.s.short, b.s.long(n), b.s.repeats, b.tmp)
            rows += batch_rows(mode, n, seen, res)
        if "live" in b.parts:
            args = ["-i", "-d", str(b.s.live_delay), *common]
            live = {t.label: live_retry(b.tmux, t, args, b.s.live_seconds) for t in b.tools}
            rows += live_rows(mode, n, seen, live)
    finally:
        tasks.close()
    return rows


def run_idle_parts(b: Bench) -> list[Row]:
    """Start-up and idle rows, with ``idle_tasks`` sleeping processes."""
    n = b.s.idle_tasks
    tasks = start_tasks("processes", n, b.tmp)
    rows: list[Row] = []
    try:
        time.sleep(0.5)
        filt = ["-p", tasks.pattern] if b.use_filter else []
        seen = str(n if b.use_filter else system_tasks(False))
        if "startup" in b.parts:
            st = measure_startup(b.tools, b.floor, ["-d", "0.1", *filt], b.s.startup_repeats, b.tmp)
            rows += startup_rows(n, seen, st)
        if "idle" in b.parts:
            idle = measure_idle(b.tmux, b.tools, ["-i", "-d", "5", *filt], b.s.idle_seconds)
            rows += with_before("idle -d 5", n, seen, idle, "% core", IDLE)
    finally:
        tasks.close()
    return rows


def compile_ours(tree: Path = REPO) -> str:
    """Our package's bytecode written beside it, as ``pip install`` writes it (PEP 3147
    ``__pycache__``): a run with PYTHONDONTWRITEBYTECODE set (or from a read-only tree)
    would otherwise compile every module at each start, a cost no installed copy pays.
    Forced: ``compileall`` keeps a ``.pyc`` whose header holds its source's mtime, in
    seconds, and does not check the size (Lib/compileall.py, ``compile_file``), so an
    edit within the second of the last compile left one stale, and the import, which
    checks the size too, compiled that module at every start."""
    ok = compileall.compile_dir(str(tree / "tiptop"), quiet=1, force=True)
    return "bytecode compiled (as installed)" if ok else "bytecode NOT all compiled"


def machine() -> str:
    """CPU model, cores, kernel and Python, for the record."""
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ver = "?"
    if shutil.which("dpkg-query"):
        q = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "tiptop"], capture_output=True)
        ver = q.stdout.decode() or "?"
    return (
        f"{model}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}, C tiptop {ver}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,500,2000,5000")
    ap.add_argument("--modes", default="processes,threads")
    ap.add_argument("--parts", default="batch,live,startup,idle")
    ap.add_argument("--quick", action="store_true", help="short runs, one repeat")
    ap.add_argument("--repeats", type=int, default=0, help="batch and start-up runs per tool")
    ap.add_argument("--no-c", action="store_true", help="measure ours only")
    ap.add_argument("--no-shim", action="store_true", help="real hardware events (needs a PMU)")
    ap.add_argument("--filter", action="store_true", help="both tools: -p <the bench's tasks>")
    ap.add_argument("--c-path", default="/usr/bin/tiptop")
    ap.add_argument("--before", type=Path, help="ours from this older tree too (a worktree)")
    ap.add_argument("--screen", default="default", help="the screen ours shows (-S)")
    ap.add_argument("--before-screen", help="as 'before': this tree (or --before's) on this screen")
    return ap.parse_args(argv)


def run(argv: list[str] | None = None) -> list[Row]:
    """Set up, measure every size and part asked for, print the table; its rows."""
    a = parse_args(argv)
    rows: list[Row] = []
    s = QUICK if a.quick else Settings()
    if a.repeats:
        s = dataclasses.replace(s, repeats=a.repeats, startup_repeats=a.repeats)
    parts = set(a.parts.split(","))
    with tempfile.TemporaryDirectory(prefix="tiptop-bench-") as d:
        tmp = Path(d)
        os.chmod(tmp, 0o755)
        (tmp / "rc").mkdir()
        shim, why = (None, "--no-shim") if a.no_shim else build_shim(tmp)
        c_path, c_why = (None, "--no-c") if a.no_c else ensure_c_tiptop(a.c_path)
        tools = make_tools(shim, c_path, tmp / "rc", a.before, a.screen, a.before_screen)
        floor = floor_tool({"LD_PRELOAD": str(shim)} if shim else {})
        compiled = compile_ours()
        print(f"machine: {machine()}")
        print(f"ours: {compiled}")
        if a.before is not None:
            print(f"before: {a.before}, {compile_ours(a.before)}")
        print(f"screens: ours {a.screen}, before {a.before_screen or a.screen}, C its default")
        print(f"RLIMIT_NOFILE: {raise_fd_limit()}; shim: {shim or why}; C: {c_path or c_why}")
        print(
            f"batch: -d {s.delay}, -n {s.short}+{s.extra[0]}..{s.extra[1]}, CPU from refresh "
            f"{s.short} to the one before last, median of {s.repeats}; "
            f"live: -d {s.live_delay}, {s.live_seconds:.0f} s; filter: {a.filter}"
        )
        print_row(HEAD)
        b = Bench(tools, floor, parts, s, tmp, Tmux(tmp), a.filter)
        try:
            for mode in a.modes.split(","):
                for n in (int(x) for x in a.sizes.split(",")):
                    rows += emit(run_size(b, mode, n))
            if parts & {"startup", "idle"}:
                rows += emit(run_idle_parts(b))
        finally:
            b.tmux.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    """The command: ``run`` it; SIGTERM and SIGHUP still kill the tasks and tmux on the way."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda n, _: sys.exit(128 + n))
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
