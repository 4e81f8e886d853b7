"""The scripted fake backend (tests.support) follows the Backend protocol and its model."""

from __future__ import annotations

import errno
import struct

import pytest

from tests.support.fake_backend import FIRST_FD, FakeBackend, FakeClock
from tiptop.kernel.attr import Attr

CYCLES = Attr(type=0, config=0)
INSNS = Attr(type=0, config=1)


def test_rates_and_times_follow_the_clock() -> None:
    b = FakeBackend()
    b.script(7, (0, 0), 1000.0)
    b.script(7, (0, 1), lambda t: 500 * t * t)
    g = b.open_group(7, [CYCLES, INSNS])
    b.clock.advance(2.0)
    r = g.read()
    assert r.values.tolist() == [2000, 2000]
    assert (r.time_enabled, r.time_running) == (2_000_000_000, 2_000_000_000)


def test_multiplexing_scales_down_values_and_running() -> None:
    b = FakeBackend(FakeClock(10.0))
    b.script(7, (0, 0), 1000.0, mux=0.25, on_cpu=0.5)
    g = b.open_group(7, [CYCLES])
    b.clock.advance(4.0)
    r = g.read()
    assert r.time_enabled == 2_000_000_000  # on a CPU half the time
    assert r.time_running == 500_000_000  # scheduled on the PMU a quarter of that
    assert r.values.tolist() == [500]  # 1000/s * 2 s on CPU * 0.25


def test_scripted_errors_and_fd_accounting() -> None:
    b = FakeBackend()
    b.event_errors[(0, 0)] = errno.ENOENT
    b.tid_errors[9] = errno.EACCES
    with pytest.raises(OSError) as e:
        b.open_group(7, [INSNS, CYCLES])
    assert e.value.errno == errno.ENOENT and e.value.member == 1  # type: ignore[attr-defined]
    with pytest.raises(OSError) as e:
        b.open_group(9, [INSNS])
    assert e.value.errno == errno.EACCES
    g = b.open_group(7, [INSNS, INSNS])
    assert b.open_fds == 2
    b.max_fds = 3
    with pytest.raises(OSError) as e:
        b.open_group(8, [INSNS, INSNS])
    assert e.value.errno == errno.EMFILE
    g.close()
    g.close()
    assert b.open_fds == 0
    with pytest.raises(OSError):
        g.read()


def test_dead_task_keeps_final_counts_and_refuses_opens() -> None:
    b = FakeBackend()
    b.script(7, (0, 1), 100.0)
    g = b.open_group(7, [INSNS])
    b.clock.advance(1.0)
    b.kill(7)
    b.clock.advance(5.0)
    assert g.read().values.tolist() == [100]
    with pytest.raises(OSError) as e:
        b.open_group(7, [INSNS])
    assert e.value.errno == errno.ESRCH


def test_group_larger_than_the_pmu_is_einval_and_groups_take_turns() -> None:
    b = FakeBackend()
    b.max_group_size[0] = 3
    b.script(7, (0, 1), 1000.0)
    with pytest.raises(OSError) as e:
        b.open_group(7, [INSNS] * 4)
    assert e.value.errno == errno.EINVAL and e.value.member == 3  # type: ignore[attr-defined]
    assert b.open_fds == 0
    g1 = b.open_group(7, [INSNS] * 3)
    g2 = b.open_group(7, [INSNS] * 2)  # 5 events > 3 counters: the two groups alternate
    other = b.open_group(8, [INSNS] * 3)  # another task's groups do not compete
    sw = b.open_group(7, [Attr(type=1, config=2)] * 4)  # the software PMU has no limit
    b.clock.advance(2.0)
    r1, r2 = g1.read(), g2.read()
    assert (r1.time_enabled, r1.time_running) == (2_000_000_000, 1_000_000_000)
    assert r1.values.tolist() == [1000] * 3  # 1000/s * 2 s, counted half the time
    assert r2.time_running == 1_000_000_000 and r2.values.tolist() == [1000] * 2
    assert other.read().time_running == 2_000_000_000
    assert sw.read().time_running == 2_000_000_000
    g2.close()
    assert g1.read().time_running == 2_000_000_000  # alone again: fits


def test_groups_are_read_by_fake_fd_numbers_as_os_read_would() -> None:
    """Each group's fds are numbers no real fd has, a closed group's handed out again
    lowest first (as open(2) does); a leader's number reads the kernel's words, a closed
    one EBADF, a short buffer ENOSPC, a scripted errno raised as it is."""
    b = FakeBackend(default_rate=1000.0)
    g1, g2 = b.open_group(7, [CYCLES, INSNS]), b.open_group(8, [CYCLES])
    assert min(g1.fds) >= FIRST_FD and len({*g1.fds, *g2.fds}) == 3
    b.clock.advance(1.0)
    words = struct.unpack("7Q", b.read_fd(g1.fds[0], 7 * 8))
    assert words == (2, 10**9, 10**9, 1000, g1.ids[0], 1000, g1.ids[1])
    assert b.read_leaders([g2.fds[0], g1.fds[0]], 7 * 8)[1] == g1.read_raw()
    with pytest.raises(OSError) as e:
        b.read_fd(g1.fds[0], 5 * 8)
    assert e.value.errno == errno.ENOSPC
    fd = g1.fds[0]
    g1.close()
    with pytest.raises(OSError) as e:
        b.read_fd(fd, 7 * 8)
    assert e.value.errno == errno.EBADF
    g3 = b.open_group(9, [CYCLES])
    assert g3.fds == [fd]  # the lowest free number
    b.read_errors[9] = errno.ESRCH
    with pytest.raises(OSError) as e:
        b.read_leaders([g2.fds[0], fd], 5 * 8)
    assert e.value.errno == errno.ESRCH
