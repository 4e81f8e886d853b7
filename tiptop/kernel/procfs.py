"""Reading ``/proc`` by hand: the stat line (proc(5) numbering), thread lists, and the
facts of a process identity.

The *per-refresh* reads, one ``/proc/PID/stat`` per task (and ``/proc/PID/task`` with
``-H``), are the scanner's whole cost, paid for every task at every refresh; psutil's
``Process.cpu_times()`` wraps the same read in more Python (and a ``Process`` per task;
benchmarks/README.md has the figures). Nor does it give what the scanner keys on: its times
are float seconds, not the exact clock ticks the %CPU deltas are taken from, and its
``create_time()`` is seconds since the epoch, not the ``starttime`` of the task identity.

The facts read *once per process identity* (at discovery, and again after an ``execve``),
the real uid, the user name and the command line (:func:`read_facts`), are two reads as
well: ``Uid:`` of ``status`` and the whole of ``cmdline``, what psutil's ``uids()`` and
``cmdline()`` read, without the ``Process`` psutil builds first from ``stat``: each start
reads them for every process on the machine (benchmarks/README.md has both costs).

Every read of a task that has vanished (ENOENT/ESRCH) raises ``TaskGone``; a ``status``
that may not be read (a ``hidepid`` /proc, proc(5)) raises ``PermissionError``.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from tiptop.errors import TaskGone
from tiptop.outside import decoded, printable

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Stat(NamedTuple):
    """The fields of ``/proc/PID[/task/TID]/stat`` tiptop uses (proc(5) numbering)."""

    comm: str  # (2) between the first '(' and the LAST ')': comm may hold both
    state: str  # (3)
    utime: int  # (14) clock ticks in user mode
    stime: int  # (15) clock ticks in kernel mode
    num_threads: int  # (20)
    starttime: int  # (22) clock ticks after boot
    processor: int  # (39) CPU last executed on
    ppid: int = 0  # (4)
    cutime: int = 0  # (16) user ticks of waited-for children (and theirs, recursively)
    cstime: int = 0  # (17) kernel ticks of waited-for children
    #: (42) clock ticks this task waited for block I/O (``delayacct_blkio_ticks``): counted
    #: only while ``kernel.task_delayacct`` is 1 (Documentation/accounting/delay-accounting.rst),
    #: the task's own even in ``/proc/PID/stat`` (fs/proc/array.c ``do_task_stat`` sums
    #: only the CPU times over threads).
    blkio: int = 0


#: A comm as shown, by its bytes: the same few names come back at every refresh.
_comm = lru_cache(maxsize=4096)(decoded)


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
        int(f[1]),
        int(f[13]),
        int(f[14]),
        int(f[39]) if len(f) > 39 else 0,
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


def read_schedstat(path: str) -> tuple[int, int] | None:
    """A task's ``schedstat`` (Documentation/scheduler/sched-stats.rst, "/proc/<pid>/schedstat"):
    its time on a CPU and its time waiting on a run queue, both in ns since it started;
    None when it is gone or the file cannot be read (a kernel without ``CONFIG_SCHED_INFO``).
    The wait is credited when it ends (``sched_info_arrive``, kernel/sched/stats.h): a task
    queued now has its current wait added when it next gets a CPU."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        run, wait, _slices = os.read(fd, 128).split()
        return int(run), int(wait)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def read_stat(path: str) -> Stat:
    """:func:`parse_stat` of the file at ``path``; ``TaskGone`` if it vanished."""
    data = read_file(path)
    try:
        return parse_stat(data)
    except (ValueError, IndexError):
        raise TaskGone(f"{path}: unreadable") from None


class Facts(NamedTuple):
    """What is read once per process identity (at discovery, and again after an exec)."""

    uid: int  # real uid (the first number of ``Uid:`` in /proc/PID/status, proc(5))
    user: str  # its login name, or the number when the passwd database has none
    cmdline: str  # one printable line (``tiptop.outside``); ``[comm]`` when empty


#: uid -> login name: a passwd lookup may go through NSS (LDAP, sssd), so it is cached.
_NAMES: dict[int, str] = {}


def read_facts(proc_root: str, pid: int, comm: str) -> Facts:
    """The real uid, user name and command line of process ``pid`` under ``proc_root``.

    ``TaskGone`` when it has vanished, ``PermissionError`` when its status may not be read;
    a command line that may not be read shows as an empty one (``[comm]``)."""
    status = read_file(f"{proc_root}/{pid}/status")
    try:
        uid = int(status.split(b"\nUid:", 1)[1].split(None, 1)[0])
    except (IndexError, ValueError):
        raise TaskGone(f"{proc_root}/{pid}/status: no Uid line") from None
    user = _NAMES.get(uid)
    if user is None:
        if len(_NAMES) >= 4096:
            _NAMES.clear()
        _NAMES[uid] = user = user_name(uid)
    return Facts(uid, user, cmdline_text(_read_cmdline(f"{proc_root}/{pid}/cmdline"), comm))


def user_name(uid: int) -> str:
    """The login name of ``uid`` (getpwuid(3)), or the number when the passwd database has
    none; a name from NSS (LDAP, sssd) is outside text, made printable."""
    try:
        return printable(pwd.getpwuid(uid).pw_name)
    except KeyError:
        return str(uid)


#: Bytes asked at each read of a file read whole (:func:`read_whole`): a command line, a
#: cgroup file.
CMDLINE_READ = 65536


def read_whole(path: str) -> bytes | None:
    """The whole of a ``/proc`` file of any length, by ``os.read`` (no buffered ``open``:
    its ``fstat``, ``lseek`` and ``ioctl`` besides); None when it cannot be read (gone,
    or another user's under ``hidepid``). A read shorter than asked was at its end, for
    the files read so: the kernel fills what is asked but for the file's end (a command
    line, or memory it cannot read, which a read again would not get either:
    fs/proc/base.c, ``get_mm_cmdline()``; a file made whole at its first read:
    ``proc_single_open()``, fs/seq_file.c ``seq_read_iter()``), so one read suffices for
    all but the longest."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    parts: list[bytes] = []
    try:
        while chunk := os.read(fd, CMDLINE_READ):
            parts.append(chunk)
            if len(chunk) < CMDLINE_READ:
                break
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(parts)


def _read_cmdline(path: str) -> bytes:
    """The whole of a ``/proc/PID/cmdline`` (it may exceed a page); empty when it cannot
    be read (:func:`read_whole`)."""
    return read_whole(path) or b""


def cmdline_text(raw: bytes, comm: str) -> str:
    """A ``/proc/PID/cmdline`` as one printable line (``tiptop.outside``): its arguments,
    NUL-separated, joined by spaces, trailing NULs (empty arguments, padding) dropped; bytes
    that are not UTF-8 and what a terminal may obey shown as escapes; ``[comm]`` when empty
    (kernel threads, zombies), as ps(1) does. A process that rewrote its arguments as one
    space-separated string (setproctitle) reads the same way."""
    text = decoded(raw.rstrip(b"\0").replace(b"\0", b" "))
    return text if text else f"[{comm}]"


def list_threads(proc_root: str, pid: int) -> list[int]:
    """The thread ids of a process, now; ``TaskGone`` if it has vanished."""
    try:
        return [int(e.name) for e in os.scandir(f"{proc_root}/{pid}/task") if e.name.isdigit()]
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError) as e:
        raise TaskGone(str(e)) from None


#: ``PIDFD_THREAD`` (include/uapi/linux/pidfd.h: ``O_EXCL``, Linux 6.9): a pidfd of one thread.
PIDFD_THREAD = os.O_EXCL


def open_pidfd(tid: int, thread: bool) -> int | None:
    """A pidfd of process ``tid`` (or of thread ``tid`` with ``thread``), readable once it
    has exited; close-on-exec already (pidfd_open(2)); None when the kernel cannot give one
    (gone, too old for threads, no pidfd_open)."""
    try:
        return os.pidfd_open(tid, PIDFD_THREAD if thread else 0)
    except (OSError, AttributeError):
        return None


#: ``CPUCLOCK_SCHED`` (include/linux/posix-timers_types.h): the CPU-time clock that reads
#: the scheduler's run time (``sum_exec_runtime``, ns: ``schedstat``'s first field).
CPUCLOCK_SCHED = 2


def process_cpu_ns(pid: int, gone: int = 0) -> int:
    """Process ``pid``'s time on a CPU so far, all its threads' (ns), from its CPU-time
    clock (clock_getcpuclockid(3), clock_gettime(2)); ``gone`` when it has none (gone, or
    not a process of this PID namespace): a kernel thread that never ran reads 0 (its
    ``schedstat`` "0 0 N"), so a caller that tells the two apart passes -1. The clock id
    is glibc's and the kernel's encoding, ``make_process_cpuclock(pid, CPUCLOCK_SCHED)``
    (include/linux/posix-timers.h).

    One system call, no path walked and no fd held, where a ``schedstat`` read opens,
    reads and closes a file (benchmarks/README.md has both costs); and any process may read
    any other's (kernel/time/posix-cpu-timers.c ``pid_for_clock()`` checks no permission,
    as ``/proc/PID/stat`` is readable by all)."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | CPUCLOCK_SCHED)
    except OSError:
        return gone


def process_cpu_times(pids: Sequence[int]) -> list[int]:
    """:func:`process_cpu_ns` of each of ``pids``, in order: one system call each, in one
    bare loop taken up again after a gone process (its 0)."""
    clock = time.clock_gettime_ns
    times: list[int] = []
    add = times.append
    left = iter(pids)
    while True:
        try:
            for pid in left:
                add(clock(((~pid) << 3) | CPUCLOCK_SCHED))
            return times
        except OSError:  # that pid's process is gone (or not of this PID namespace)
            add(0)


def clocks_readable(proc_root: str) -> bool:
    """Whether the processes listed under ``proc_root`` have CPU-time clocks this process
    can read by their PIDs (:func:`process_cpu_ns`): it is ``/proc``, of this PID
    namespace (:func:`names_this_process`), not another tree laid out like it."""
    return proc_root == "/proc" and names_this_process(proc_root)


def names_this_process(proc_root: str) -> bool:
    """Whether ``PROC_ROOT/self`` names this process: a ``/proc`` of this process's PID
    namespace, whose PIDs are the ones system calls take."""
    try:
        return os.readlink(f"{proc_root}/self") == str(os.getpid())
    except OSError:
        return False


def uptime_ticks(proc_root: str) -> float:
    """The system's uptime (``/proc/uptime``, proc(5)) in clock ticks; 0 if unreadable."""
    try:
        return float(read_file(f"{proc_root}/uptime").split()[0]) * CLK_TCK
    except (TaskGone, ValueError, IndexError):
        return 0.0
