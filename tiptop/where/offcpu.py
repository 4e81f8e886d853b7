"""Off-CPU time: where the threads of one process wait, from ``sched:sched_switch``.

Each thread gets the tracepoint as a per-task sampling event (``PERF_TYPE_TRACEPOINT``,
its id from tracefs, every occurrence sampled): the kernel fires it in ``__schedule()``
while the thread is still the one running (``trace_sched_switch`` comes before
``context_switch()`` in kernel/sched/core.c), so the sample carries the call chain of the
thread as it leaves the CPU, the kernel's part and the user's. The same event asks for
the thread's ``PERF_RECORD_SWITCH`` records (``context_switch``, with ``sample_id_all``
for their time): the record of its coming back ends the wait. Times are on
``CLOCK_MONOTONIC`` (``use_clockid``), so that a wait still going on at a refresh is
counted up to then and the rest at the next one: a thread blocked for a minute shows in
every refresh of that minute. A wait is weighted by its length in nanoseconds.

A chain's kernel part says how it waits (``do_nanosleep``, ``anon_pipe_read``,
``futex_wait``), under scheduler functions that say nothing (``__schedule``, ``schedule``,
``schedule_hrtimeout_range``): a stack keeps its user frames and, below them, the first
kernel function that is not one of :data:`SCHEDULER` (:func:`blocked_in`).

Tracepoints' samples with kernel call chains are root's (CAP_PERFMON and, for the id,
tracefs, which is root-only); without them :func:`unavailable` says why in one line and
the profile has no waiting part. Bounded as the on-CPU sampling: one ring buffer per
thread within :data:`BUFFER_BUDGET`; waits the kernel could not store are counted lost.
"""

from __future__ import annotations

import mmap
import time
from collections import Counter

from tiptop.events.tracefs import tracepoint_id
from tiptop.host import Host
from tiptop.kernel import Attr
from tiptop.kernel.attr import SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME
from tiptop.kernel.ring import Drained
from tiptop.vocab import PerfType
from tiptop.where.resolve import Resolver, Site

#: The tracepoint sampled.
TRACEPOINT = ("sched", "sched_switch")
#: The fields of each sample: its time ends the running part, its chain says where.
SAMPLE_TYPE = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN
#: ``CLOCK_MONOTONIC`` (time.h): the clock ``time.monotonic_ns`` reads.
CLOCK_MONOTONIC = 1
#: The most ring-buffer memory the off-CPU events map in all.
BUFFER_BUDGET = 512 << 10
#: Bytes of the records of one switch, as sized for: the sample with a chain of about
#: twenty frames (kernel and user), and the two switch records.
SWITCH_BYTES = 256
#: Switches per second of a thread, as sized for.
SWITCH_RATE = 500
#: Kernel functions of the scheduler itself, which say nothing of why a thread waits.
SCHEDULER = ("__schedule", "schedule", "preempt_schedule", "io_schedule", "_cond_resched")


def unavailable(host: Host) -> str | None:
    """Why off-CPU time cannot be sampled here, in words, or None when it can."""
    if not host.privileged:
        return (
            "off-CPU time not sampled: sched:sched_switch with call chains needs root "
            "or CAP_PERFMON (and tracefs, root-only)"
        )
    return None


def switch_attr(tracepoint: int) -> Attr:
    """The ``perf_event_attr`` of the ``sched:sched_switch`` tracepoint ``tracepoint`` on
    one thread: every switch sampled (its kernel and user chain), its switch records timed
    on ``CLOCK_MONOTONIC``."""
    return Attr(
        type=PerfType.TRACEPOINT,
        config=tracepoint,
        read_format=0,
        sample_period=1,
        sample_type=SAMPLE_TYPE,
        exclude_kernel=False,  # the tracepoint fires in the kernel
        sample_max_stack=127,
        sample_id_all=True,
        context_switch=True,
        use_clockid=True,
        clockid=CLOCK_MONOTONIC,
    )


def tracepoint(host: Host) -> int:
    """The id of ``sched:sched_switch``; ``EventError`` (one line) when tracefs says no."""
    return tracepoint_id(*TRACEPOINT, host.sysfs_root)


def switch_pages(threads: int, delay: float) -> int:
    """Data pages per thread's buffer (a power of two): room for two intervals of
    switches at :data:`SWITCH_RATE`, within :data:`BUFFER_BUDGET` shared by ``threads``."""
    page = mmap.PAGESIZE
    want = max(1, int(2 * SWITCH_RATE * SWITCH_BYTES * max(delay, 0.1) / page))
    budget = max(1, BUFFER_BUDGET // page // max(threads, 1) - 1)
    up = 1 << (want - 1).bit_length()
    return up if up <= budget else 1 << (budget.bit_length() - 1)


def blocked_in(frames: tuple[Site, ...], kernel: int) -> tuple[Site, ...]:
    """A chain's frames (innermost first, the first ``kernel`` of them the kernel's) with
    the kernel's part cut to the function it waits in: the first that is not the
    scheduler's."""
    user = frames[kernel:]
    why = next((f for f in frames[:kernel] if not f[0].startswith(SCHEDULER)), None)
    return user if why is None else (why, *user)


class Waits:
    """The waits of one process's threads (see the module's docstring), from what their
    rings hold at each refresh; the open wait of each thread is carried to the next."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        #: Per thread, its wait going on: its stack (innermost first) and since when.
        self._open: dict[int, tuple[tuple[Site, ...], int]] = {}
        self.switches = 0

    def take(self, drained: Drained) -> Counter[tuple[Site, ...]]:
        """The nanoseconds waited per stack (outermost first) in one ring's records, the
        waits still going on counted up to now."""
        waited: Counter[tuple[Site, ...]] = Counter()
        samples = iter(zip(drained.tids, drained.times, drained.chains, strict=True))
        # Records come in order in one thread's ring: merge the samples and the switches.
        pending = next(samples, None)
        for switch in drained.switches:
            while pending is not None and pending[1] <= switch.time:
                self._leave(*pending)
                pending = next(samples, None)
            if not switch.out:
                self._back(switch.tid, switch.time, waited)
        while pending is not None:
            self._leave(*pending)
            pending = next(samples, None)
        return waited

    def _leave(self, tid: int, when: int, chain: tuple[int, ...]) -> None:
        frames, user = self._resolver.frames(chain)
        self._open[tid] = (blocked_in(frames, len(frames) - user), when)
        self.switches += 1

    def _back(self, tid: int, when: int, waited: Counter[tuple[Site, ...]]) -> None:
        left = self._open.pop(tid, None)
        if left is not None and when > left[1]:
            waited[left[0][::-1]] += when - left[1]

    def now(self, waited: Counter[tuple[Site, ...]], gone: set[int]) -> None:
        """Count every wait going on up to now (the rest at the next refresh); the
        threads ``gone`` are forgotten."""
        now = time.monotonic_ns()
        for tid, (frames, since) in list(self._open.items()):
            if now > since:
                waited[frames[::-1]] += now - since
            if tid in gone:
                del self._open[tid]
            else:
                self._open[tid] = (frames, max(now, since))


__all__ = [
    "SCHEDULER",
    "Waits",
    "blocked_in",
    "switch_attr",
    "switch_pages",
    "tracepoint",
    "unavailable",
]
