"""``--where``: one process sampled, its samples named and counted per function.

:class:`TaskProfiler` opens one sampling event per thread of the process (``cpu-clock``,
a software event every machine has, PMU or not; user mode only, which
``perf_event_paranoid`` 2 allows on one's own processes), each with its ring buffer
(``tiptop.kernel.ring``); threads started later are found at each refresh (the
``task/`` listing) and sampled from then on. One buffer per thread: the kernel maps no
buffer for an inherited per-task event, and sends no thread's samples into another
thread's buffer (``perf_mmap()`` and ``perf_event_set_output()`` in kernel/events/core.c).

Bounded: :data:`RATE_HZ` samples per second of CPU time at most (``freq`` mode), buffers
sized for two refresh intervals of samples and :data:`BUFFER_BUDGET` bytes in all (split
between the threads present at the start), one process at a time; everything is closed by
:meth:`TaskProfiler.close`. Each refresh gives a :class:`Profile`: per ``(symbol, module)``
its samples, the samples the kernel could not store (a full buffer), and whether the
process exited.
"""

from __future__ import annotations

import errno
import math
import mmap
import os
import time
from collections import Counter

from tiptop.errors import TiptopError
from tiptop.host import Host
from tiptop.kernel import Attr, explain_open_error, perf_event_open
from tiptop.kernel.attr import SAMPLE_IP, SAMPLE_TID
from tiptop.kernel.followed import FollowedProcess
from tiptop.kernel.ring import SampleRing
from tiptop.messages import MessageLog
from tiptop.outside import decoded
from tiptop.readonly import readonly
from tiptop.vocab import HwId, PerfType, SwId
from tiptop.where.elf import SymbolCache
from tiptop.where.resolve import Resolver

#: Samples per second of the task's CPU time (perf top's default is 4000; 1000 keeps the
#: cost of naming them within a refresh's budget).
RATE_HZ = 1000
#: The most ring-buffer memory one profile maps (the unprivileged default of
#: ``perf_event_mlock_kb`` is 516 KiB, perf_event_open(2)).
BUFFER_BUDGET = 256 << 10
#: Bytes of one sample record: header, ip, pid and tid.
SAMPLE_BYTES = 24
#: The event sampled where no other is chosen: a software event every machine has.
EVENT = "cpu-clock"
#: ``PERF_FLAG_FD_CLOEXEC``.
_FD_CLOEXEC = 8


@readonly
class SampledEvent:
    """The event whose overflows are sampled, by perf's name, with why it was chosen."""

    name: str
    type: int
    config: int
    #: Words for the window's first line: what a sample stands for.
    means: str


#: Time on CPU: every machine has it, PMU or not.
CPU_CLOCK = SampledEvent(EVENT, PerfType.SOFTWARE, SwId.CPU_CLOCK, "time on CPU")


def event_for(node: str | None) -> SampledEvent:
    """The hardware event that shows where a task meets its top-down bottleneck ``node``
    (a label of ``tiptop.screens.topdown``: ``BE/Mem``, ``BAD/Misp``...), for a machine
    with a PMU: a memory-bound task's cache misses, a mispredicting task's branch misses,
    else its cycles (time, as the core counts it). The generic events, which every PMU
    perf drives maps (perf_event_open(2), PERF_TYPE_HARDWARE)."""
    if node is not None and node.startswith("BE/Mem"):
        return SampledEvent(
            "cache-misses", PerfType.HARDWARE, HwId.CACHE_MISSES, f"its bottleneck {node}"
        )
    if node in ("BAD", "BAD/Misp"):
        return SampledEvent(
            "branch-misses", PerfType.HARDWARE, HwId.BRANCH_MISSES, f"its bottleneck {node}"
        )
    why = f"its bottleneck {node}" if node else "no bottleneck over its threshold"
    return SampledEvent("cycles", PerfType.HARDWARE, HwId.CPU_CYCLES, why)


@readonly
class Hot:
    """One function's samples in a refresh."""

    symbol: str
    module: str
    samples: int


@readonly
class Profile:
    """One refresh of ``--where``: where process ``pid`` spent the samples of ``event``
    taken at ``rate_hz`` over ``interval`` seconds (``hot`` by samples, most first)."""

    pid: int
    comm: str
    event: str
    rate_hz: int
    interval: float
    samples: int
    lost: int
    hot: tuple[Hot, ...]
    exited: bool

    def share(self, hot: Hot) -> float:
        """``hot``'s part of this refresh's samples, in percent."""
        return 100.0 * hot.samples / self.samples if self.samples else 0.0


def data_pages(threads: int, delay: float, rate_hz: int = RATE_HZ) -> int:
    """Data pages per thread's buffer (a power of two): room for two intervals of samples
    (rounded up), within :data:`BUFFER_BUDGET` shared by ``threads`` (rounded down), at
    least one."""
    page = mmap.PAGESIZE
    want = math.ceil(2 * rate_hz * SAMPLE_BYTES * max(delay, 0.1) / page)
    budget = max(1, BUFFER_BUDGET // page // max(threads, 1) - 1)
    up = 1 << (want - 1).bit_length()
    return up if up <= budget else 1 << (budget.bit_length() - 1)


def sampling_attr(rate_hz: int = RATE_HZ, event: SampledEvent = CPU_CLOCK) -> Attr:
    """The ``perf_event_attr`` of ``event`` sampled ``rate_hz`` times a second (the
    kernel adjusts the period, ``freq``), user mode only, on one thread (not inherited:
    the kernel maps no buffer of an inherited per-task event, ``perf_mmap()`` in
    kernel/events/core.c)."""
    return Attr(
        type=event.type,
        config=event.config,
        read_format=0,
        sample_period=rate_hz,
        freq=True,
        sample_type=SAMPLE_IP | SAMPLE_TID,
    )


class TaskProfiler:
    """Samples of process ``pid`` named per function (see the module's docstring).
    Raises :class:`TiptopError` with one line when the process does not exist or its
    first event cannot be opened (the errno and what would allow it)."""

    def __init__(
        self,
        pid: int,
        host: Host,
        delay: float,
        messages: MessageLog | None = None,
        event: SampledEvent = CPU_CLOCK,
    ) -> None:
        self.pid = pid
        #: The event sampled (:func:`event_for` where a PMU exists).
        self.event = event
        self.messages = messages if messages is not None else MessageLog()
        self._host = host
        proc = f"{host.proc_root}/{pid}"
        # The process that has the PID now, followed from here on (not its number).
        self._process = FollowedProcess(pid, host.proc_root)
        try:
            with open(f"{proc}/comm", "rb") as f:
                self.comm = decoded(f.read().rstrip(b"\n"))
            uid = os.stat(proc).st_uid
            tids = sorted(int(t) for t in os.listdir(f"{proc}/task"))
        except (OSError, ValueError):
            self._process.close()
            raise TiptopError(f"--where {pid}: no such process") from None
        self._resolver = Resolver(pid, uid, SymbolCache(self._say), host.proc_root, self._say)
        #: Per sampled thread id, its event's fd and ring buffer.
        self._rings: dict[int, tuple[int, SampleRing]] = {}
        self._pages = data_pages(len(tids), delay)
        self._exited = False
        try:
            self._open(tids)
        except (TiptopError, OSError):
            self.close()
            raise
        if not self._rings or self._process.exited():  # what was read may be another's
            self.close()
            raise TiptopError(f"--where {pid}: no such process")
        self._resolver.refresh()
        self._since = time.monotonic()

    def _say(self, key: str, line: str) -> None:
        """One line about this profile (a file skipped, and why), once per key."""
        self.messages.say(key, f"--where {self.pid}: {line}")

    def _open(self, tids: list[int]) -> list[int]:
        """Open and map an event on each of ``tids`` not sampled yet; the ones opened. A
        thread that ended meanwhile is skipped. The first refusal of the process's first
        open is an error (one line); a later one is a message."""
        attr = sampling_attr(event=self.event)
        opened = []
        for tid in tids:
            if tid in self._rings:
                continue
            try:
                fd = perf_event_open(attr, tid, -1, -1, _FD_CLOEXEC)
            except OSError as e:
                if e.errno == errno.ESRCH:
                    continue  # that thread ended since the listing
                line = f"--where {self.pid}: {self._explain(e)}"
                if not self._rings:
                    raise TiptopError(line) from None
                self.messages.say(f"where:open:{e.errno}", line)
                continue
            try:
                self._rings[tid] = (fd, SampleRing(fd, self._pages))
                opened.append(tid)
            except OSError as e:
                os.close(fd)
                line = (
                    f"--where {self.pid}: cannot map a ring buffer: {e.strerror}; "
                    "raise kernel.perf_event_mlock_kb or ulimit -l"
                )
                if not self._rings:
                    raise TiptopError(line) from None
                self.messages.say("where:mmap", line)
        return opened

    def _threads(self) -> list[int]:
        """The process's threads now (none once it exited)."""
        try:
            return sorted(int(t) for t in os.listdir(f"{self._host.proc_root}/{self.pid}/task"))
        except (OSError, ValueError):
            return []

    def _explain(self, e: OSError) -> str:
        host = self._host
        return explain_open_error(
            e,
            self.event.name,
            paranoid=host.paranoid,
            privileged=host.privileged,
            kernel=False,
            in_container=host.in_container,
            fd_limits=(host.fd_soft, host.fd_hard),
        )

    def refresh(self) -> Profile:
        """The samples taken since the last refresh (or the start), named. Once the
        process exited, nothing of what its PID names now is looked at: the last maps
        read name its last samples, and its events are closed."""
        now = time.monotonic()
        interval, self._since = now - self._since, now
        counts: Counter[int] = Counter()
        lost = 0
        for _fd, ring in self._rings.values():
            drained = ring.drain()
            counts.update(drained.ips)
            lost += drained.lost
        if not self._exited:
            self._follow()
        named: Counter[tuple[str, str]] = Counter()
        for ip, n in counts.items():
            named[self._resolver.name(ip)] += n
        hot = tuple(Hot(s, m, n) for (s, m), n in named.most_common())
        return Profile(
            pid=self.pid,
            comm=self.comm,
            event=self.event.name,
            rate_hz=RATE_HZ,
            interval=interval,
            samples=sum(counts.values()),
            lost=lost,
            hot=hot,
            exited=self._exited,
        )

    def _follow(self) -> None:
        """Threads and maps as they are now, while the process lives: what is read under
        its PID is kept only when the process is still the one followed afterwards (an
        event opened on a thread of another process that took the PID would sample it)."""
        listed = self._threads()
        for tid in set(self._rings) - set(listed):
            self._close_ring(tid)
        opened = self._open(listed)
        read = self._resolver.refresh(still=lambda: not self._process.exited())
        if not read or self._process.exited():
            self._exited = True
            for tid in opened:
                self._close_ring(tid)

    def _close_ring(self, tid: int) -> None:
        """Close the event of thread ``tid`` (drained already)."""
        fd, ring = self._rings.pop(tid)
        ring.close()
        os.close(fd)

    def start(self) -> None:
        """Drop what was sampled so far: the next refresh covers the time from now."""
        for _fd, ring in self._rings.values():
            ring.drain()
        self._since = time.monotonic()

    def exited(self) -> bool:
        """Whether the process exited (the next refresh is its last): the process
        followed, whatever has its PID now."""
        return self._exited or self._process.exited()

    def close(self) -> None:
        """Unmap every buffer, close every event and the process's pidfd."""
        for tid in list(self._rings):
            self._close_ring(tid)
        self._process.close()


__all__ = [
    "CPU_CLOCK",
    "EVENT",
    "RATE_HZ",
    "Hot",
    "Profile",
    "SampledEvent",
    "TaskProfiler",
    "data_pages",
    "event_for",
    "sampling_attr",
]
