"""Counters opened from the CPU their tasks last ran on, on the real kernel: the kernel
then installs and enables them by a local call, not a cross-CPU one (kernel/events/core.c
``perf_install_in_context`` and ``event_function_call``, through ``task_function_call``),
which /proc/interrupts counts on the task's CPU ("CAL: Function call interrupts", x86).
And ``PerfBackend.open_from`` gives the thread back the CPUs it was allowed."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.support.builders import screen
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.kernel.group import PerfBackend
from tiptop.kernel.procfs import read_stat

#: Sleepers, each opened once: the opens from elsewhere make about two calls each.
SLEEPERS = 60
#: Their command line, which no other process has (``-c``-style match on it).
ARGS = ("sleep", "7654.321")

SCREEN = screen("sw", counters={"TC": "task-clock"}, columns=[("   TC", "%8.0f", "delta(TC)")])


def calls_on(cpu: int) -> int | None:
    """Function-call interrupts CPU ``cpu`` has handled (/proc/interrupts ``CAL``), or
    None where the kernel does not list them."""
    with open("/proc/interrupts") as f:
        cpus = f.readline().split()
        for line in f:
            name, *counts = line.split()
            if name == "CAL:":
                return int(counts[cpus.index(f"CPU{cpu}")])
    return None


def this_cpu() -> int:
    """The CPU the calling thread runs on (proc(5) ``stat`` field 39)."""
    return read_stat("/proc/thread-self/stat").processor


@pytest.fixture
def allowed() -> Iterator[set[int]]:
    """The CPUs this thread may run on, given back after the test."""
    mask = os.sched_getaffinity(0)
    if not {0, 1} <= mask:
        pytest.skip(f"needs CPUs 0 and 1, this thread may run on {sorted(mask)}")
    yield mask
    os.sched_setaffinity(0, mask)


@pytest.fixture
def sleepers(allowed: set[int]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``SLEEPERS`` processes asleep, each last run on CPU 1."""
    os.sched_setaffinity(0, {1})
    ps = [subprocess.Popen(ARGS) for _ in range(SLEEPERS)]
    os.sched_setaffinity(0, allowed)
    time.sleep(0.2)
    yield ps
    for p in ps:
        p.kill()
        p.wait()


def calls_while_started(cpus: set[int]) -> int:
    """Function-call interrupts on CPU 1 while a sampler of the sleepers starts (opening
    their counters) on CPU 0, allowed ``cpus``."""
    os.sched_setaffinity(0, {0})
    os.sched_setaffinity(0, cpus)
    s = Sampler(SCREEN, SamplerConfig(only_name=" ".join(ARGS), match_cmdline=True))
    try:
        before = calls_on(1)
        s.start()
        after = calls_on(1)
        assert len(s._scanner.tasks) == SLEEPERS
        assert os.sched_getaffinity(0) == cpus  # given back
    finally:
        s.close()
    assert before is not None and after is not None
    return after - before


def test_opened_from_their_cpu_no_cross_cpu_call(
    sleepers: list[subprocess.Popen[bytes]], allowed: set[int]
) -> None:
    if calls_on(1) is None:
        pytest.skip("/proc/interrupts lists no function-call interrupts (CAL) here")
    # Only CPU 0 allowed: the opens are made from there, about two calls each on CPU 1.
    elsewhere = calls_while_started({0})
    if elsewhere < SLEEPERS:
        pytest.skip(f"{elsewhere} function-call interrupts counted for {SLEEPERS} opens")
    near = calls_while_started({0, 1})
    assert near < SLEEPERS // 4, (near, elsewhere)


def test_open_from_moves_the_thread_and_gives_its_cpus_back(allowed: set[int]) -> None:
    b = PerfBackend()
    os.sched_setaffinity(0, {0})
    os.sched_setaffinity(0, {0, 1})
    b.open_from(1)
    assert os.sched_getaffinity(0) == {1} and this_cpu() == 1
    b.open_from(0)
    assert os.sched_getaffinity(0) == {0} and this_cpu() == 0
    b.open_from(None)
    assert os.sched_getaffinity(0) == {0, 1}
    b.open_from(None)  # not moved: nothing to give back
    assert os.sched_getaffinity(0) == {0, 1}


def test_open_from_a_cpu_not_allowed_stays(allowed: set[int]) -> None:
    b = PerfBackend()
    os.sched_setaffinity(0, {0})
    b.open_from(1)
    assert os.sched_getaffinity(0) == {0} and this_cpu() == 0
    b.open_from(os.cpu_count() or 1)  # no such CPU
    assert os.sched_getaffinity(0) == {0}
    b.open_from(None)
    assert os.sched_getaffinity(0) == {0}
