"""tiptop.kernel.procfs.read_facts: the real uid, user name and command line of a process
identity, read by hand, on the real /proc and on a fake one, against psutil's; and the
scanner reading them once per identity."""

from __future__ import annotations

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
from tiptop.kernel.procfs import cmdline_text, read_facts
from tiptop.outside import decoded


def test_own_process() -> None:
    """The facts psutil gives of this process: its real uid, its user's name, its
    arguments (joined by spaces)."""
    f = read_facts("/proc", os.getpid(), "ignored")
    p = psutil.Process()
    assert (f.uid, f.user) == (p.uids().real, p.username()) == (os.getuid(), _name())
    assert f.cmdline == decoded(os.fsencode(" ".join(p.cmdline())))


def _name() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def test_fake_tree_unknown_uid_long_cmdline(tmp_path: Path) -> None:
    """On another /proc tree: a uid the passwd database does not know shows as its number;
    a command line longer than one page is read whole; a gone pid is ``TaskGone``."""
    unknown = next(u for u in range(54321, 60000) if not _has_user(u))
    fp = FakeProc(tmp_path)
    long_arg = "x" * 70000
    fp.add(10, "job", uid=unknown, cmdline=b"job\0" + long_arg.encode() + b"\0\0\0")
    f = read_facts(str(tmp_path), 10, "job")
    assert f == Facts(unknown, str(unknown), f"job {long_arg}")
    with pytest.raises(TaskGone):
        read_facts(str(tmp_path), 11, "gone")


def _has_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_cmdline_text() -> None:
    assert cmdline_text(b"", "kworker/0:1") == "[kworker/0:1]"
    assert cmdline_text(b"\0\0", "k") == "[k]"
    assert cmdline_text(b"a\0b c\0\0\0", "k") == "a b c"
    assert cmdline_text(b"a\0\0b\0", "k") == "a  b"  # an empty argument between
    assert cmdline_text(b"nginx: worker process", "k") == "nginx: worker process"
    assert cmdline_text(b"tab\there\0", "k") == "tab\\there"
    # Bytes that are not UTF-8 as their escapes, and so the C1 controls a terminal obeys
    # (U+009B CSI, U+009D OSC).
    assert cmdline_text(b"\xff\0", "k") == "\\xff"
    assert cmdline_text("\x9b2J\0\x9d0;t\x9c".encode(), "k") == "\\x9b2J \\x9d0;t\\x9c"


def test_access_denied_is_permission_error_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's status that may not be read (a hidepid /proc) is PermissionError: the
    scanner leaves that process out and keeps the others."""
    fp = FakeProc(tmp_path)
    fp.add(10, "hidden")
    fp.add(11, "open", cmdline=b"open\0")
    denied = f"{tmp_path}/10/status"
    real_open = os.open

    def fake_open(path: Any, *args: Any, **kw: Any) -> int:
        if str(path) == denied:  # what a hidepid=1 /proc answers (proc(5) "hidepid")
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", fake_open)
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
