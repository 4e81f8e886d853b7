"""Reading ``/proc`` files: the stat line (proc(5) numbering), the real uid, the command
line, thread lists. Every read of a task that has vanished (ENOENT/ESRCH) raises
``TaskGone``; permission errors are left to the caller (``PermissionError``).
"""

from __future__ import annotations

import os
import pwd
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
    ppid: int = 0  # (4)
    cutime: int = 0  # (16) user ticks of waited-for children (and theirs, recursively)
    cstime: int = 0  # (17) kernel ticks of waited-for children


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
        int(f[1]),
        int(f[13]),
        int(f[14]),
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
