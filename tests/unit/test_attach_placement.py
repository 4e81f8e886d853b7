"""Where counters are opened from (``Attacher._placed``, ``Backend.open_from``): the tasks
that last ran on one CPU, where enough did, are opened from that CPU, so that the kernel
installs and enables their groups by a local call rather than a cross-CPU one
(``PerfBackend.open_from``); the opener is given back its CPUs afterwards. Busy first and
unmoved when the fds may not all fit."""

from __future__ import annotations

from tests.support.fake_backend import FakeBackend
from tests.support.sampling import FakeEnv, make
from tiptop.engine.count.attach import NEAR


def opened(b: FakeBackend) -> list[tuple[int, int | None]]:
    """``(tid, CPU opened from)`` of each group opened on a task (not the plan's probes,
    on ourselves: tid 0)."""
    return [(tid, cpu) for tid, cpu in b.opened_from if tid]


def test_tasks_are_opened_from_the_cpu_they_last_ran_on(env: FakeEnv) -> None:
    fp, b = env
    on = {1: 1, 2: 0, 3: 1, 4: 0, 5: 1, 6: 0, 7: 1, 8: 0, 9: 3, 10: 3}
    for pid, cpu in on.items():
        fp.add(pid, f"t{pid}", processor=cpu)
    s = make(env, fd_budget=1000)
    s.start()
    assert sorted({tid for tid, _ in opened(b)}) == sorted(on)
    # CPUs 1 and 0 have NEAR (4) tasks each: a move to each, then back; CPU 3's two tasks
    # are opened from wherever the opener is (the last move's CPU, here).
    assert NEAR == 4
    assert b.moves == [1, 0, None], b.moves
    placed = {tid: cpu for tid, cpu in opened(b) if on[tid] != 3}
    assert placed == {tid: cpu for tid, cpu in on.items() if cpu != 3}
    assert b.cpu is None
    s.close()


def test_a_process_is_opened_on_every_thread_from_its_leaders_cpu(env: FakeEnv) -> None:
    fp, b = env
    for pid in (10, 20, 30):
        fp.add(pid, f"t{pid}", processor=2)
    fp.add(40, "threads", tids=(41, 42), processor=2)
    s = make(env, fd_budget=1000)
    s.start()
    assert b.moves == [2, None]
    assert sorted(opened(b)) == [(t, 2) for t in (10, 20, 30, 40, 41, 42) for _ in (0, 1)]
    s.close()


def test_no_move_for_fewer_tasks_than_near_on_any_cpu(env: FakeEnv) -> None:
    fp, b = env
    for pid in range(1, 7):
        fp.add(pid, f"t{pid}", processor=pid % 3)
    s = make(env, fd_budget=1000)
    s.start()
    assert b.moves == [None] and {cpu for _, cpu in opened(b)} == {None}
    assert len({tid for tid, _ in opened(b)}) == 6
    s.close()


def test_no_move_when_the_fds_may_not_all_fit(env: FakeEnv) -> None:
    """Ten tasks need 4 fds each (the screen's two groups, 3 fds, and a pidfd): with a
    budget of 39 they are opened busy first, from wherever; with 40, from their CPU."""
    fp, b = env
    for pid in range(1, 11):
        fp.add(pid, f"t{pid}", processor=1)
    s = make(env, fd_budget=39)
    s.start()
    assert b.moves == [None]
    assert {cpu for _, cpu in opened(b)} == {None}
    s.close()
    b.moves.clear()
    s = make(env, fd_budget=40)
    s.start()
    assert b.moves == [1, None]
    s.close()
