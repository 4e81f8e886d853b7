"""A fake ``/proc`` tree on disk for the task and sampler tests (files only, no kernel)."""

from __future__ import annotations

import shutil
from pathlib import Path


def stat_line(
    pid: int,
    comm: str,
    *,
    state: str = "S",
    utime: int = 0,
    stime: int = 0,
    threads: int = 1,
    starttime: int = 1000,
    processor: int = 0,
) -> str:
    """A /proc/PID/stat line (proc(5) field numbering) with the fields tiptop reads set."""
    f = ["0"] * 52
    f[0], f[1], f[2] = str(pid), f"({comm})", state
    f[13], f[14] = str(utime), str(stime)
    f[19] = str(threads)
    f[21] = str(starttime)
    f[38] = str(processor)
    return " ".join(f) + "\n"


class FakeProc:
    """Builds and edits a fake /proc under ``root``."""

    def __init__(self, root: Path, uptime: float = 100.0) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "uptime").write_text(f"{uptime:.2f} 0.00\n")
        # Boot time (proc(5) /proc/stat "btime"): psutil < 7 reads it to build a Process.
        (root / "stat").write_text("btime 1700000000\n")

    def add(
        self,
        pid: int,
        comm: str,
        *,
        uid: int = 0,
        cmdline: bytes = b"",
        tids: tuple[int, ...] = (),
        **stat: object,
    ) -> None:
        """A process (and its threads, main thread included)."""
        d = self.root / str(pid)
        d.mkdir(exist_ok=True)
        all_tids = (pid, *tids)
        line = stat_line(pid, comm, threads=len(all_tids), **stat)  # type: ignore[arg-type]
        (d / "stat").write_text(line)
        (d / "status").write_text(f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        (d / "cmdline").write_bytes(cmdline)
        for tid in all_tids:
            t = d / "task" / str(tid)
            t.mkdir(parents=True, exist_ok=True)
            (t / "stat").write_text(stat_line(tid, comm, threads=len(all_tids), **stat))  # type: ignore[arg-type]

    def set_stat(self, pid: int, comm: str, tid: int | None = None, **stat: object) -> None:
        """Rewrite a stat file (a thread's when ``tid`` is given)."""
        d = self.root / str(pid)
        path = d / "stat" if tid is None else d / "task" / str(tid) / "stat"
        path.write_text(stat_line(tid or pid, comm, **stat))  # type: ignore[arg-type]

    def remove(self, pid: int, tid: int | None = None) -> None:
        """A process (or one thread) exits."""
        d = self.root / str(pid)
        shutil.rmtree(d if tid is None else d / "task" / str(tid))
