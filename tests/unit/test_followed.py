"""A process followed, not a number (issue 52, item 4; ``tiptop.kernel.followed``): its
start time on a fake ``/proc`` (its pidfd on the real kernel: tests/system/
test_where_hostile.py); and the live ``f`` window, which keeps showing a process that
exited, saying so, instead of sampling on."""

from __future__ import annotations

from pathlib import Path

from tests.fakeproc import FakeProc
from tiptop.kernel.followed import FollowedProcess
from tiptop.live.where import Hottest
from tiptop.where import CPU_CLOCK, Hot, Profile, SampledEvent


def test_on_a_fake_proc_a_later_process_under_the_pid_is_another(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(77, "first", starttime=1000)
    followed = FollowedProcess(77, str(tmp_path))
    assert followed._pidfd is None and not followed.exited()
    fp.set_stat(77, "second", starttime=5000)  # the PID reused
    assert followed.exited()
    fp.set_stat(77, "first", starttime=1000, state="Z")
    assert followed.exited()
    fp.remove(77)
    assert followed.exited()
    assert FollowedProcess(78, str(tmp_path)).exited()  # no such process: at once


class ExitingProfiler:
    """A fake ``TaskProfiler`` (named so): two refreshes of samples, then the process
    exited; any refresh after that is counted (there must be none)."""

    event: SampledEvent = CPU_CLOCK

    def __init__(self) -> None:
        self.refreshes = 0

    def refresh(self) -> Profile:
        self.refreshes += 1
        exited = self.refreshes >= 2
        return Profile(9, "job", "cpu-clock", 1000, 1.0, 10, 0, (Hot("f", "m", 10),), exited)

    def close(self) -> None:
        pass


def test_the_f_window_stays_on_a_process_that_exited() -> None:
    profiler = ExitingProfiler()
    window = Hottest(lambda _pid, _node, _delay: profiler, "")
    window.follow(9, None, 1.0)
    for _ in range(5):
        window.refresh()
    assert profiler.refreshes == 2
    lines = window.lines()
    assert lines[1] == "PID 9 (job): 10 samples of cpu-clock at 1000 Hz (exited)"
    assert "100.0%  f  m" in lines[2]
