"""engine.count.exits: which watched tasks exited, told by eventfds standing in for pidfds (an
eventfd with a count is readable, as an exited task's pidfd is: a fake for what would take
a thousand processes; tests/system/test_exit_watch.py uses real pidfds)."""

from __future__ import annotations

import os

import pytest

from tiptop.engine.count.exits import ExitWatch
from tiptop.engine.scan.task import Task


def _task(tid: int, starttime: int = 1) -> Task:
    return Task(tid, tid, starttime, 0, "root", "t", "t", 1, "S", 0, 0, 0)


def test_every_exit_is_told_in_one_call_past_a_thousand() -> None:
    """All ready fds come back from one call: epoll's default maxevents (FD_SETSIZE - 1)
    would leave some for the next refresh."""
    n = 1100
    watch = ExitWatch(lambda tid, thread: os.eventfd(1))  # readable at once, as if exited
    fds = [watch.watch(_task(tid), False) for tid in range(1, n + 1)]
    try:
        assert len(watch) == n
        assert watch.ended() == {(tid, 1) for tid in range(1, n + 1)}
    finally:
        for fd in fds:
            assert fd is not None
            watch.forget(fd)
        watch.close()


def test_nothing_ready_nothing_told() -> None:
    watch = ExitWatch(lambda tid, thread: os.eventfd(0))  # never readable: a live task
    fds = [watch.watch(_task(tid), False) for tid in (7, 8)]
    assert watch.ended() == set()
    for fd in fds:
        assert fd is not None
        watch.forget(fd)
    watch.close()


def test_pidfds_forgotten_after_the_set_is_closed_are_closed_and_a_new_set_watches() -> None:
    """``Attacher.close`` closes the set before its pidfds: forgetting them then closes each
    fd (none is left open, none raises), and a later watch works in a new set."""
    watch = ExitWatch(lambda tid, thread: os.eventfd(1))
    fds = [watch.watch(_task(tid), False) for tid in (7, 8)]
    watch.close()
    for fd in fds:
        assert fd is not None
        watch.forget(fd)
        with pytest.raises(OSError):  # EBADF: closed
            os.fstat(fd)
    assert len(watch) == 0
    fd = watch.watch(_task(9), False)
    assert fd is not None
    assert watch.ended() == {(9, 1)}
    watch.forget(fd)
    watch.close()
