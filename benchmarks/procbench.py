"""Set-up, tasks and whole-process measurements for ``whole_process.py``.

Each tool (ours, ``python3 -m tiptop -S default``; the C original, ``/usr/bin/tiptop``) runs
as a child process on the same sleeping tasks, with the preload shim ``hw2sw.c`` turning the
default screen's hardware events into software ones, and is measured as a user pays it:

* batch: the child's run time (``/proc/PID/task/*/schedstat``, as for live) read while it
  runs, when its output shows refresh ``A`` printed and when it shows refresh ``B``
  printed (each refresh ends with one blank line); the difference over ``B - A`` is one
  refresh, start-up and exit outside the window;
* live: the tool in a tmux pane, its run time (``/proc/PID/task/*/schedstat``, first field,
  nanoseconds, proc(5)) between two screen updates, over the ``Iteration:`` counter that
  ``--timestamp`` prints at the bottom of both tools' screens.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHIM_SRC = Path(__file__).with_name("hw2sw.c")
C_TIPTOP = "/usr/bin/tiptop"
#: a batch row: the PID (TID with -H), the +/- thread marker, then the screen's cells
ROW = re.compile(r"^\s*\d+[+\-]?\s")
ITERATION = re.compile(r"Iteration:\s*(\d+)")
#: the default screen's cells per row (%CPU %SYS P Mcycle Minstr IPC %MISS %BMIS %BUS)
CELLS = 9


@dataclass
class Tool:
    """One tiptop to measure: its label, command prefix and extra environment."""

    label: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    #: A word of the header its batch output must show: the screen it was asked for
    #: opened, not a fallback one (the default screen's ``Mcycle``, the C original's too).
    header: str = "Mcycle"

    def command(self, args: list[str]) -> list[str]:
        """The full command line for ``args``."""
        return [*self.argv, *args]

    def environ(self) -> dict[str, str]:
        """This process's environment plus the tool's."""
        return {**os.environ, **self.env}


def raise_fd_limit() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard one (both tools inherit it); the limits after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def build_shim(tmp: Path) -> tuple[Path | None, str]:
    """Compile ``hw2sw.c`` into ``tmp``: (the .so, "") or (None, why not)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler (cc) to build the hw2sw shim"
    so = tmp / "hw2sw.so"
    r = subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-o", str(so), str(SHIM_SRC), "-ldl"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        return None, f"cc failed: {r.stderr.strip()[:200]}"
    return so, ""


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def ensure_c_tiptop(path: str = C_TIPTOP) -> tuple[str | None, str]:
    """The C original at ``path``, installed with apt-get (Debian package ``tiptop``) when
    missing and running as root: (path, "") or (None, why not)."""
    if _is_elf(path):
        return path, ""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, f"{path} missing; install the Debian package tiptop (needs root, apt-get)"
    r = subprocess.run(
        ["apt-get", "install", "-y", "-q", "tiptop"],
        capture_output=True,
        text=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
    if r.returncode != 0 or not _is_elf(path):
        return None, f"apt-get install tiptop failed: {r.stderr.strip()[-200:]}"
    return path, ""


def make_tools(
    shim: Path | None,
    c_path: str | None,
    rcdir: Path,
    before: Path | None = None,
    screen: str = "default",
    before_screen: str | None = None,
) -> list[Tool]:
    """Ours (on ``screen``), the C original (when ``c_path``; its default screen) and ours
    from the tree ``before`` (when given: an older checkout, e.g. a ``git worktree``) or on
    ``before_screen`` (this tree on another screen, to compare two screens side by side),
    all with ``shim`` preloaded and reading the empty rc directory ``rcdir`` (so that no
    ~/.tiptoprc changes their screens)."""
    pre = {"LD_PRELOAD": str(shim)} if shim else {}
    # -P: no working directory first on sys.path (Python 3.11), so PYTHONPATH names the
    # tree whatever directory this runs from (``-m`` would put it first: python(1)).
    argv = (sys.executable, "-P", "-m", "tiptop", "-W", str(rcdir), "-S")
    tools = [Tool("ours", (*argv, screen), {**pre, "PYTHONPATH": str(REPO)}, _header(screen))]
    if c_path:
        tools.append(Tool("C", (c_path, "-W", str(rcdir)), dict(pre)))
    if before is not None or before_screen is not None:
        tree = REPO if before is None else before
        other = screen if before_screen is None else before_screen
        tools.append(
            Tool("before", (*argv, other), {**pre, "PYTHONPATH": str(tree)}, _header(other))
        )
    return tools


def _header(screen: str) -> str:
    """A column header that shows built-in ``screen`` opened, not the screen tiptop falls
    back to where a screen's events do not count (``state``): the first of its headers
    that the fallback does not have. Exits, naming it, where no built-in has that name."""
    sys.path.insert(0, str(REPO))  # the screens of this tree (a --before tree has the same)
    from tiptop.screens import Target, builtin_screens

    screens = {s.name: s for s in builtin_screens(Target())}
    if screen not in screens:
        raise SystemExit(f"--screen {screen}: not a built-in screen ({', '.join(screens)})")
    fallback = set() if screen == "state" else {c.header.strip() for c in screens["state"].columns}
    headers = [c.header.strip() for c in screens[screen].columns]
    return next((h for h in headers if h not in fallback), headers[-1])


def rotation(tools: list[Tool], r: int) -> list[Tool]:
    """The order of ``tools`` at repeat ``r``: each tool takes each place in turn, so that
    none always runs first (on a cold cache) or right after another (on its leftovers)."""
    k = r % len(tools) if tools else 0
    return tools[k:] + tools[:k]


THREADS_CHILD = """
import sys, threading
threading.stack_size(64 * 1024)
stop = threading.Event()
ts = [threading.Thread(target=stop.wait, daemon=True) for _ in range(int(sys.argv[1]) - 1)]
for t in ts:
    t.start()
print("ready", flush=True)
sys.stdin.read()
"""


@dataclass
class Tasks:
    """N sleeping tasks: processes (copies of sleep(1) under a unique name) or the threads
    of one Python process; ``pattern`` is the ``-p`` value that selects just them."""

    mode: str
    n: int
    procs: list[subprocess.Popen[bytes]]
    pattern: str

    def close(self) -> None:
        """Kill and reap every task."""
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
            for pipe in (p.stdin, p.stdout):
                if pipe:
                    pipe.close()


def start_tasks(mode: str, n: int, tmp: Path) -> Tasks:
    """Start ``n`` sleeping tasks of ``mode`` ("processes" or "threads")."""
    if mode == "threads":
        p = subprocess.Popen(
            [sys.executable, "-c", THREADS_CHILD, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
        return Tasks(mode, n, [p], str(p.pid))
    name = f"tbw{os.getpid() % 100000}"
    exe = tmp / name
    if not exe.exists():
        shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    procs = [subprocess.Popen([str(exe), "100000"], stdin=subprocess.DEVNULL) for _ in range(n)]
    return Tasks(mode, n, procs, name)


def system_tasks(threads: bool) -> int:
    """How many processes (or threads) this machine runs now, from /proc."""
    pids = [d for d in os.listdir("/proc") if d.isdigit()]
    if not threads:
        return len(pids)
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += len(os.listdir(f"/proc/{pid}/task"))
    return total


@dataclass
class Run:
    """One batch run of a tool: its CPU, peak RSS and the rows of its last refresh."""

    cpu_s: float
    peak_kb: int
    rows: int
    counted: int
    error: str = ""
    #: CPU seconds a refresh inside the run's window (``Window``), when one was asked for
    per_refresh_s: float | None = None


def last_block(text: str) -> tuple[int, int]:
    """(rows, rows with every cell counted) of the last refresh in batch ``text``."""
    rows = counted = 0
    for block in reversed(re.split(r"\n\s*\n", text)):
        lines = [ln for ln in block.splitlines() if ROW.match(ln)]
        if lines:
            rows = len(lines)
            counted = sum("?" not in ln.split()[1 : 1 + CELLS] for ln in lines)
            break
    return rows, counted


def run_time_ns(pid: int) -> int:
    """Run time of every thread of ``pid`` so far (``/proc/PID/task/*/schedstat``, first
    field, ns); ``OSError``/``ValueError`` when any cannot be read (no tick fallback: a
    window's two marks must be in the same unit)."""
    return sum(
        int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        for tid in os.listdir(f"/proc/{pid}/task")
    )


def cpu_ns(pid: int) -> int:
    """CPU time used so far by every thread of ``pid``, in nanoseconds: its run time, or
    where schedstat cannot be read its user and system ticks (proc(5))."""
    try:
        return run_time_ns(pid)
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15
        return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def vm_hwm_kb(pid: int) -> int:
    """Peak RSS of ``pid`` so far (``VmHWM`` in /proc/PID/status, proc(5)), in kB; 0 once
    it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Window:
    """The child's run time when its batch output first shows ``first`` and then ``last``
    refreshes printed, read while it runs: each refresh block ends with one blank line, as
    does the preamble (so ``k`` refreshes printed show as ``k + 1`` blank lines). Both
    marks are read at the same point of a refresh (right after the flush that carries its
    last line), so the window holds ``last - first`` whole refreshes (schedstat's run time
    of a task on a CPU is brought up to date at the scheduler's updates, a tick at most
    late: a few ms per mark). A mark is kept only
    when the poll that saw it saw exactly that refresh end, less than ``max_gap`` seconds
    after the poll before (else it could fall in another refresh): ``problem`` says why
    not."""

    def __init__(self, out: Path, first: int, last: int, max_gap: float = 0.02) -> None:
        self.out, self.first, self.last, self.max_gap = out, first, last, max_gap
        self.offset, self.tail, self.blanks = 0, b"", 0
        self.cpu: dict[int, int] = {}
        self.problem = ""
        self._polled = time.monotonic()

    def poll(self, pid: int) -> None:
        """Read what the child wrote since the last poll; note its run time at a mark."""
        now, before = time.monotonic(), self._polled
        self._polled = now
        try:
            with open(self.out, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        self.offset += len(data)
        both = self.tail + data
        self.blanks += len(re.findall(rb"\n(?=\n)", both))  # a pair counts when it ends
        self.tail = both[-1:]
        for k in (self.first, self.last):
            if k in self.cpu or self.blanks < k + 1 or self.problem:
                continue
            if self.blanks > k + 1 or now - before > self.max_gap:
                self.problem = f"refresh {k}'s end seen late ({now - before:.3f} s after a poll)"
                continue
            try:
                self.cpu[k] = run_time_ns(pid)
            except (OSError, ValueError) as e:
                self.problem = f"run time unreadable at refresh {k}: {e}"

    def per_refresh_s(self) -> float | None:
        """CPU seconds a refresh inside the window; None when a mark is missing or the
        window read no time."""
        if len(self.cpu) < 2 or self.cpu[self.last] <= self.cpu[self.first]:
            return None
        return (self.cpu[self.last] - self.cpu[self.first]) / 1e9 / (self.last - self.first)


def wait_watching(
    pid: int, timeout: float, window: Window | None = None
) -> tuple[int, resource.struct_rusage, int]:
    """Wait for child ``pid`` (killed after ``timeout`` s): its wait status, its rusage and
    its peak RSS in kB, read every 20 ms while it runs, and ``window``'s marks polled every
    2 ms when there is one (no faster wake-ups beside a run without). Not ``ru_maxrss``:
    the kernel starts a child's from the RSS of the process that forked it (fs/exec.c,
    exec_mmap), here this Python process, which is larger than the C original."""
    step = 0.002 if window is not None else 0.02
    per_hwm = round(0.02 / step)
    end, hwm, n = time.monotonic() + timeout, 0, 0
    while True:
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            return status, ru, hwm
        if window is not None:
            window.poll(pid)
        if n % per_hwm == 0:
            hwm = max(hwm, vm_hwm_kb(pid))
        n += 1
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            _, status, ru = os.wait4(pid, 0)
            return status, ru, hwm
        time.sleep(step)


def run_batch(
    tool: Tool,
    args: list[str],
    out: Path,
    timeout: float = 300,
    window: tuple[int, int] | None = None,
) -> Run:
    """Run ``tool`` with ``args`` to completion, stdout into ``out``; its rusage, and its
    CPU a refresh between refreshes ``window[0]`` and ``window[1]`` printed."""
    err = out.with_suffix(".err")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(out), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, str(err), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    cmd = tool.command(args)
    pid = os.posix_spawn(cmd[0], cmd, tool.environ(), file_actions=actions)
    marks = Window(out, *window) if window else None
    status, ru, hwm = wait_watching(pid, timeout, marks)
    text = out.read_text(errors="replace")
    rows, counted = last_block(text)
    # the asked screen's header, not a fallback screen's (the shim makes its events open)
    error = (
        f"no {tool.header} column: {tool.label}'s screen did not open"
        if tool.header not in text
        else ""
    )
    per_refresh = marks.per_refresh_s() if marks else None
    if marks and per_refresh is None and not error:
        error = marks.problem or f"refreshes {window} were not seen printed while it ran"
    n = args[args.index("-n") + 1] if "-n" in args else ""
    blanks = len(re.findall(r"\n(?=\n)", text))
    if marks and n.isdigit() and blanks != int(n) + 1 and not error:
        # a refresh without rows prints no blank line, a name with a newline one more
        error = f"{blanks} blank lines for {n} refreshes: the window's count is off"
    if os.waitstatus_to_exitcode(status) != 0:
        tail = err.read_text(errors="replace").strip().splitlines()[-3:]
        error = f"exit {os.waitstatus_to_exitcode(status)}: {' / '.join(tail)}"
    return Run(ru.ru_utime + ru.ru_stime, hwm, rows, counted, error, per_refresh)


def run_retrying(
    tool: Tool,
    args: list[str],
    out: Path,
    crashes: list[str],
    window: tuple[int, int] | None = None,
) -> Run:
    """``run_batch``, run again (up to 3 tries) when the tool fails, each failure noted in
    ``crashes``: the C original sometimes aborts (a double free) when a task it attaches to
    exits at that moment, which other people's short-lived processes make likely."""
    for _ in range(3):
        run = run_batch(tool, args, out, window=window)
        if not run.error:
            break
        crashes.append(run.error)
    return run


@dataclass
class BatchResult:
    """Median CPU per refresh of one tool, with the peak RSS, the last rows seen and the
    failed runs that were run again."""

    ms: float
    rss_mb: float
    rows: int
    counted: int
    samples: list[float]
    crashes: list[str]


def measure_batch(
    tools: list[Tool], args: list[str], short: int, long: int, repeats: int, out: Path
) -> dict[str, BatchResult | str]:
    """CPU per refresh of each tool with ``args``: one ``-n long`` run, its CPU between
    refresh ``short`` printed and refresh ``long - 1`` printed (``Window``: the last
    refresh's line only shows at exit), over the refreshes between; median over
    ``repeats`` (tools alternated, in :func:`rotation` order); a string instead when a
    tool kept failing."""
    samples: dict[str, list[float]] = {t.label: [] for t in tools}
    crashes: dict[str, list[str]] = {t.label: [] for t in tools}
    last: dict[str, Run] = {}
    failed: dict[str, str] = {}
    for r in range(repeats):
        for tool in rotation(tools, r):
            if tool.label in failed:
                continue
            run = run_retrying(
                tool,
                [*args, "-n", str(long)],
                out / f"{tool.label}.out",
                crashes[tool.label],
                window=(short, long - 1),
            )
            if run.error or run.per_refresh_s is None:
                failed[tool.label] = f"failed 3 times: {run.error or 'no window'}"
                continue
            samples[tool.label].append(run.per_refresh_s)
            prev = last.get(tool.label)
            peak = max(run.peak_kb, prev.peak_kb if prev else 0)
            last[tool.label] = Run(0, peak, run.rows, run.counted)
    res: dict[str, BatchResult | str] = dict(failed)
    for label, xs in samples.items():
        if xs and label not in failed:
            run = last[label]
            res[label] = BatchResult(
                statistics.median(xs) * 1e3,
                run.peak_kb / 1024,
                run.rows,
                run.counted,
                xs,
                crashes[label],
            )
    return res
