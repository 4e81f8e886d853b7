"""tiptop.kernel.procfs.read_facts: the real uid, user name and command line of a process
identity, through psutil, on the real /proc and on a fake one; and the scanner reading them
once per identity."""

from __future__ import annotations

import builtins
import errno
import os
import pwd
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.fakeproc import FakeProc
from tiptop.engine.scan.tasks import Facts, TaskScanner
from tiptop.errors import TaskGone
from tiptop.kernel.procfs import join_cmdline, read_facts
from tiptop.outside import decoded


def test_own_process() -> None:
    f = read_facts("/proc", os.getpid(), "ignored")
    assert f.uid == os.getuid()
    assert f.user == pwd.getpwuid(os.getuid()).pw_name
    # An oracle independent of psutil: the raw bytes, NULs as spaces.
    raw = Path("/proc/self/cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ")
    assert f.cmdline == decoded(raw)


def test_fake_tree_unknown_uid_long_cmdline_and_procfs_path_restored(tmp_path: Path) -> None:
    """On another /proc tree: a uid the passwd database does not know shows as its number;
    a command line longer than one page is read whole; psutil's PROCFS_PATH is back to
    what it was afterwards, also after a failed read."""
    unknown = next(u for u in range(54321, 60000) if not _has_user(u))
    fp = FakeProc(tmp_path)
    long_arg = "x" * 5000
    fp.add(10, "job", uid=unknown, cmdline=b"job\0" + long_arg.encode() + b"\0\0\0")
    before = psutil.PROCFS_PATH
    f = read_facts(str(tmp_path), 10, "job")
    assert f == Facts(unknown, str(unknown), f"job {long_arg}")
    assert before == psutil.PROCFS_PATH
    with pytest.raises(TaskGone):
        read_facts(str(tmp_path), 11, "gone")
    assert before == psutil.PROCFS_PATH


def _has_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_join_cmdline() -> None:
    assert join_cmdline([], "kworker/0:1") == "[kworker/0:1]"
    assert join_cmdline(["", ""], "k") == "[k]"
    assert join_cmdline(["a", "b c", "", ""], "k") == "a b c"
    assert join_cmdline(["tab\there"], "k") == "tab\\there"
    # psutil decodes with surrogateescape: the byte 0xff comes back as its escape, and
    # so do the C1 controls a terminal obeys (U+009B CSI, U+009D OSC).
    assert join_cmdline([os.fsdecode(b"\xff")], "k") == "\\xff"
    assert join_cmdline(["\x9b2J", "\x9d0;t\x9c"], "k") == "\\x9b2J \\x9d0;t\\x9c"


def test_access_denied_is_permission_error_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """psutil's AccessDenied on a process's status (a hidepid /proc) is PermissionError:
    the scanner leaves that process out and keeps the others."""
    fp = FakeProc(tmp_path)
    fp.add(10, "hidden")
    fp.add(11, "open", cmdline=b"open\0")
    denied = f"{tmp_path}/10/status"
    real_open = builtins.open

    def fake_open(file: Any, *args: Any, **kw: Any) -> Any:
        if str(file) == denied:  # what a hidepid=1 /proc answers (proc(5) "hidepid")
            raise PermissionError(errno.EACCES, "Permission denied", file)
        return real_open(file, *args, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    with pytest.raises(PermissionError):
        read_facts(str(tmp_path), 10, "hidden")
    scan = TaskScanner(str(tmp_path)).scan()
    assert [(t.tid, t.cmdline) for t in scan.tasks] == [(11, "open")]


def test_scanner_reads_facts_once_per_identity(tmp_path: Path) -> None:
    """Facts are read at discovery and after an exec (``comm`` changes), not per refresh;
    the injected reader's facts are what the rows show and what ownership filters on."""
    fp = FakeProc(tmp_path)
    fp.add(10, "sh")
    fp.add(11, "other")
    calls: list[tuple[int, str]] = []

    def facts(pid: int, comm: str) -> Facts:
        calls.append((pid, comm))
        return Facts(1000 if pid == 10 else 0, f"u{pid}", f"{comm} --pid {pid}")

    sc = TaskScanner(str(tmp_path), euid=1000, facts_reader=facts)
    for _ in range(3):
        (t,) = sc.scan().tasks
    assert sorted(calls) == [(10, "sh"), (11, "other")]
    assert (t.tid, t.uid, t.user, t.cmdline) == (10, 1000, "u10", "sh --pid 10")
    fp.set_stat(10, "python3")
    (t2,) = sc.scan().tasks
    assert calls[-1] == (10, "python3") and len(calls) == 3
    assert t2 is t and t.cmdline == "python3 --pid 10"
