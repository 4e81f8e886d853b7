"""The tasks a user may watch, read straight from ``/proc`` at every refresh.

A task is identified by ``(tid, starttime)`` (proc(5): ``starttime`` is field 22 of
``/proc/PID/stat``, in clock ticks since boot), so a reused PID is a new task and two
processes are never mixed. Ownership follows the original (tiptop-original.md section 9.3):
a non-root user sees the processes whose *real* uid (``Uid:`` of ``/proc/PID/status``)
is its effective uid; root sees everything. ``-u`` filters on top of that.

Each refresh costs one ``stat`` read per task (one per process in process mode, where
``/proc/PID/stat`` already sums the times of every thread, live and dead, proc(5)); the
name, command line and user are read once at discovery and again when ``comm`` changes
(an ``execve``). %CPU comes from ``utime``/``stime`` deltas (fields 14 and 15, in
``sysconf(_SC_CLK_TCK)`` ticks), seeded at discovery so the first value covers a real
interval. A task that vanishes between two looks (ENOENT/ESRCH) is dropped silently.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from tiptop.errors import TaskGone

CLK_TCK = os.sysconf("SC_CLK_TCK")

#: Control characters shown as escapes so one task is always one line.
_SAFE = {c: f"\\x{c:02x}" for c in range(32)} | {
    ord("\n"): "\\n",
    ord("\t"): "\\t",
    ord("\r"): "\\r",
    0x7F: "\\x7f",
}


class Stat(NamedTuple):
    """The fields of ``/proc/PID[/task/TID]/stat`` tiptop uses (proc(5) numbering)."""

    comm: str  # (2) between the first '(' and the LAST ')': comm may hold both
    state: str  # (3)
    utime: int  # (14) clock ticks in user mode
    stime: int  # (15) clock ticks in kernel mode
    num_threads: int  # (20)
    starttime: int  # (22) clock ticks after boot
    processor: int  # (39) CPU last executed on


def safe_text(text: str) -> str:
    """``text`` with control characters (newlines included) escaped: always one line."""
    return text.translate(_SAFE)


@lru_cache(maxsize=4096)
def _comm(raw: bytes) -> str:
    return safe_text(raw.decode("utf-8", "replace"))


def parse_stat(data: bytes) -> Stat:
    """Parse a stat line. ``comm`` may contain spaces and parentheses, so the fields after
    it are split from the last ``)``. Raises ``ValueError`` on a malformed line."""
    open_ = data.find(b"(")
    close = data.rfind(b")")
    if open_ < 0 or close < open_:
        raise ValueError("malformed stat line")
    f = data[close + 2 :].split()
    # f[0] is field 3 (state); field N is f[N - 3].
    return Stat(
        _comm(data[open_ + 1 : close]),
        f[0].decode(),
        int(f[11]),
        int(f[12]),
        int(f[17]),
        int(f[19]),
        int(f[36]),
    )


def read_file(path: str) -> bytes:
    """The whole of a small /proc file; ``TaskGone`` when its task has vanished."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError) as e:
        raise TaskGone(str(e)) from None
    try:
        return os.read(fd, 4096)
    except ProcessLookupError as e:  # ESRCH: the task died while we read
        raise TaskGone(str(e)) from None
    finally:
        os.close(fd)


def read_stat(path: str) -> Stat:
    """:func:`parse_stat` of the file at ``path``; ``TaskGone`` if it vanished."""
    data = read_file(path)
    try:
        return parse_stat(data)
    except (ValueError, IndexError):
        raise TaskGone(f"{path}: unreadable") from None


def read_real_uid(proc_root: str, pid: int) -> int:
    """The real uid of a process (first number of ``Uid:`` in ``/proc/PID/status``)."""
    for line in read_file(f"{proc_root}/{pid}/status").splitlines():
        if line.startswith(b"Uid:"):
            return int(line.split()[1])
    raise TaskGone(f"{proc_root}/{pid}/status: no Uid line")


def read_cmdline(proc_root: str, pid: int, comm: str) -> str:
    """The full command line, NULs as spaces, control characters escaped; ``[comm]``
    when empty (kernel threads, zombies), as ps(1) does."""
    try:
        raw = read_file(f"{proc_root}/{pid}/cmdline")
    except (TaskGone, PermissionError):
        raw = b""
    # /proc/PID/cmdline can exceed one read on long command lines.
    if len(raw) == 4096:
        try:
            with open(f"{proc_root}/{pid}/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            pass
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return safe_text(text) if text else f"[{comm}]"


@lru_cache(maxsize=1024)
def user_name(uid: int) -> str:
    """The login name of ``uid`` (cached: passwd lookups are slow), or the number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def list_threads(proc_root: str, pid: int) -> list[int]:
    """The thread ids of a process, now; ``TaskGone`` if it has vanished."""
    try:
        return [int(e.name) for e in os.scandir(f"{proc_root}/{pid}/task") if e.name.isdigit()]
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError) as e:
        raise TaskGone(str(e)) from None


@dataclass(eq=False, slots=True)
class Task:
    """One watched task (a process in process mode, a thread with ``-H``).

    The ``cpu_*`` values are percentages of one CPU over the last interval; ``new`` is true
    in the scan that discovered it (its CPU values then mean nothing yet).
    """

    tid: int
    pid: int
    starttime: int
    uid: int
    user: str
    name: str
    cmdline: str
    num_threads: int
    state: str
    processor: int
    utime: int
    stime: int
    #: Lifetime-average %CPU at discovery (for busy-first attach).
    cpu_lifetime: float = 0.0
    cpu_total: float = 0.0
    cpu_sys: float = 0.0
    cpu_user: float = 0.0
    new: bool = True
    #: Free slot for the sampler's per-task state.
    data: object = field(default=None, repr=False)

    @property
    def key(self) -> tuple[int, int]:
        """The identity ``(tid, starttime)``."""
        return (self.tid, self.starttime)


@dataclass
class Scan:
    """The result of one :meth:`TaskScanner.scan`."""

    #: Live watched tasks, old ones first in discovery order, then the new ones.
    tasks: list[Task]
    #: Tasks discovered by this scan (also in ``tasks``).
    new: list[Task]
    #: Tasks seen before and gone (exited, zombie, or PID reused) since the last scan.
    gone: list[Task]
    #: Seconds since the previous scan (0 for the first).
    interval: float
    #: Every thread of the watched processes (for the "Tasks:" line).
    threads_total: int


def _uptime_ticks(proc_root: str) -> float:
    try:
        return float(read_file(f"{proc_root}/uptime").split()[0]) * CLK_TCK
    except (TaskGone, ValueError, IndexError):
        return 0.0


class TaskScanner:
    """Finds the watched tasks at each :meth:`scan` and keeps their CPU accounting.

    ``threads`` selects thread rows (``-H``); ``uid`` keeps only that real uid;
    ``only_pid``/``only_name`` (substring of the name, or of the command line with
    ``match_cmdline``) restrict discovery as ``-p`` does. ``euid`` defaults to ours;
    0 means every process is visible.
    """

    def __init__(
        self,
        proc_root: str = "/proc",
        *,
        threads: bool = False,
        uid: int | None = None,
        only_pid: int | None = None,
        only_name: str | None = None,
        match_cmdline: bool = False,
        euid: int | None = None,
    ) -> None:
        self.proc_root = proc_root
        self.threads = threads
        self.uid = uid
        self.only_pid = only_pid
        self.only_name = only_name
        self.match_cmdline = match_cmdline
        self.euid = os.geteuid() if euid is None else euid
        # pid -> identity and facts of every process seen (watched or not), so that a
        # process is examined (status, cmdline) once per identity, not once per refresh.
        self._procs: dict[int, _Proc] = {}
        self._tasks: dict[int, Task] = {}
        self._last: float | None = None
        self._uptime: float | None = None

    # ------------------------------------------------------------------ processes
    def _examine(self, pid: int, st: Stat) -> _Proc:
        """A process seen for the first time (or after an exec): ownership and filters."""
        root = self.proc_root
        uid = read_real_uid(root, pid)
        cmdline = read_cmdline(root, pid, st.comm)
        watched = (self.euid == 0 or uid == self.euid) and (self.uid is None or uid == self.uid)
        if watched and self.only_pid is not None:
            watched = pid == self.only_pid
        if watched and self.only_name is not None:
            watched = self.only_name in (cmdline if self.match_cmdline else st.comm)
        return _Proc(pid, st.starttime, st.comm, uid, user_name(uid), cmdline, watched)

    def scan(self) -> Scan:
        """Look at ``/proc`` once; see :class:`Scan`."""
        now = time.monotonic()
        interval = 0.0 if self._last is None else now - self._last
        self._last = now
        self._uptime: float | None = None
        root = self.proc_root
        procs = self._procs
        old = self._tasks
        seen: dict[int, Task] = {}
        new: list[Task] = []
        threads_total = 0
        live_pids: set[int] = set()
        try:
            entries = list(os.scandir(root))
        except OSError:
            entries = []
        for entry in entries:
            name = entry.name
            if not name.isdigit():
                continue
            pid = int(name)
            try:
                st = read_stat(f"{root}/{name}/stat")
                p = procs.get(pid)
                # New identity, or an exec (comm changed): look at it (again).
                if p is None or p.starttime != st.starttime or p.comm != st.comm:
                    p = procs[pid] = self._examine(pid, st)
            except (TaskGone, PermissionError):
                continue
            live_pids.add(pid)
            # A zombie leader whose other threads still run is a live process (its
            # nr_threads still counts them; proc(5) "num_threads").
            if not p.watched or (st.state in "ZX" and st.num_threads <= 1):
                continue
            threads_total += st.num_threads
            if not self.threads:
                self._update(seen, new, old, pid, pid, p, st, interval)
                continue
            try:
                tids = list_threads(root, pid)
            except TaskGone:
                continue
            for tid in tids:
                try:
                    tst = read_stat(f"{root}/{pid}/task/{tid}/stat")
                except TaskGone:
                    continue
                if tst.state in "ZX":
                    continue
                self._update(seen, new, old, tid, pid, p, tst, interval)
        for pid in [q for q in procs if q not in live_pids]:
            del procs[pid]
        gone = [t for tid, t in old.items() if seen.get(tid) is not t]
        self._tasks = seen
        return Scan(list(seen.values()), new, gone, interval, threads_total)

    def _update(
        self,
        seen: dict[int, Task],
        new: list[Task],
        old: dict[int, Task],
        tid: int,
        pid: int,
        p: _Proc,
        st: Stat,
        interval: float,
    ) -> None:
        t = old.get(tid)
        if t is not None and t.starttime == st.starttime:
            if interval > 0:
                scale = 100.0 / (interval * CLK_TCK)
                du = max(st.utime - t.utime, 0)
                ds = max(st.stime - t.stime, 0)
                t.cpu_user = du * scale
                t.cpu_sys = ds * scale
                t.cpu_total = (du + ds) * scale
            t.utime = st.utime
            t.stime = st.stime
            t.state = st.state
            t.processor = st.processor
            t.num_threads = st.num_threads
            if t.name != p.comm or t.cmdline != p.cmdline:
                t.name, t.cmdline, t.uid, t.user = p.comm, p.cmdline, p.uid, p.user
            t.new = False
        else:
            t = Task(
                tid, pid, st.starttime, p.uid, p.user, p.comm, p.cmdline, st.num_threads,
                st.state, st.processor, st.utime, st.stime,
            )  # fmt: skip
            if self._uptime is None:
                self._uptime = _uptime_ticks(self.proc_root)
            age = self._uptime - st.starttime
            if age > 0:
                t.cpu_lifetime = 100.0 * (st.utime + st.stime) / age
            new.append(t)
        seen[tid] = t


@dataclass(slots=True)
class _Proc:
    pid: int
    starttime: int
    comm: str
    uid: int
    user: str
    cmdline: str
    watched: bool


def alive(proc_root: str, tasks: Iterable[Task]) -> list[Task]:
    """The tasks among ``tasks`` whose identity is still present in ``/proc`` now."""
    out = []
    for t in tasks:
        path = (
            f"{proc_root}/{t.pid}/stat"
            if t.tid == t.pid
            else f"{proc_root}/{t.pid}/task/{t.tid}/stat"
        )
        try:
            if read_stat(path).starttime == t.starttime:
                out.append(t)
        except TaskGone:
            pass
    return out
