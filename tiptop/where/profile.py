"""``--where``: one process sampled, its samples named and counted per function.

:class:`TaskProfiler` opens one sampling event per thread of the process (``cpu-clock``,
a software event every machine has, PMU or not; user mode only, which
``perf_event_paranoid`` 2 allows on one's own processes), each with its ring buffer
(``tiptop.kernel.ring``); threads started later are found at each refresh (the
``task/`` listing) and sampled from then on. One buffer per thread: the kernel maps no
buffer for an inherited per-task event, and sends no thread's samples into another
thread's buffer (``perf_mmap()`` and ``perf_event_set_output()`` in kernel/events/core.c).

Each sample carries its call chain (``PERF_SAMPLE_CALLCHAIN``): the kernel walks the
user stack by frame pointer (``perf_callchain_user()`` in arch/x86/events/core.c), at most
:data:`MAX_STACK` frames, and no kernel frames (the samples are taken in user mode). A
program built without frame pointers gives chains of one or two frames, or garbage past
its first; that is said once (:data:`SHALLOW`), and its stacks are shown as they came,
never padded. DWARF unwinding (a copy of the stack with each sample, unwound with the
files' ``.eh_frame``) is the next step (docs/where.md).

Bounded: :data:`RATE_HZ` samples per second of CPU time at most (``freq`` mode), buffers
sized for two refresh intervals of samples and :data:`BUFFER_BUDGET` bytes in all (split
between the threads present at the start), one process at a time; everything is closed by
:meth:`TaskProfiler.close`. Each refresh gives a :class:`Profile`: per ``(symbol, module)``
its samples, per call stack its samples, the samples the kernel could not store (a full
buffer), and whether the process exited. Nothing is kept from one refresh to the next
but the names (``tiptop.where.resolve``), so memory stays bounded however long it runs.
"""

from __future__ import annotations

import errno
import math
import mmap
import os
import time
from collections import Counter

from tiptop.errors import EventError, TiptopError
from tiptop.host import Host
from tiptop.kernel import Attr, explain_open_error, perf_event_open
from tiptop.kernel.attr import SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_TID
from tiptop.kernel.followed import FollowedProcess
from tiptop.kernel.ring import SampleRing
from tiptop.messages import MessageLog
from tiptop.outside import decoded
from tiptop.readonly import readonly
from tiptop.vocab import HwId, PerfType, SwId
from tiptop.where import offcpu
from tiptop.where.elf import SymbolCache
from tiptop.where.resolve import Resolver, Site

#: Samples per second of the task's CPU time (perf top's default is 4000; 1000 keeps the
#: cost of naming them within a refresh's budget).
RATE_HZ = 1000
#: The most ring-buffer memory one profile maps (the unprivileged default of
#: ``perf_event_mlock_kb`` is 516 KiB per CPU, perf_event_open(2)).
BUFFER_BUDGET = 512 << 10
#: Bytes of one sample record, as sized for: header, ip, pid and tid, and a call chain of
#: about a dozen frames (its length and context mark).
SAMPLE_BYTES = 128
#: The most frames of a call chain: the kernel's default ``perf_event_max_stack``.
MAX_STACK = 127
#: The fields of each sample.
SAMPLE_TYPE = SAMPLE_IP | SAMPLE_TID | SAMPLE_CALLCHAIN
#: Call chains of at most this many user frames are the sign of code built without
#: frame pointers: a function called from ``main`` has three (it, ``main``, libc's caller).
SHALLOW = 2
#: The part of a refresh's samples (of at least :data:`SHALLOW_SAMPLES`) with shallow
#: chains past which the line is said.
SHALLOW_PART = 0.5
SHALLOW_SAMPLES = 20
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
class Stack:
    """One call stack, its outermost caller first, and its weight: samples on CPU, or
    nanoseconds off CPU."""

    frames: tuple[Site, ...]
    weight: int


@readonly
class Profile:
    """One refresh of ``--where``: where process ``pid`` spent the samples of ``event``
    taken at ``rate_hz`` over ``interval`` seconds (``hot`` by samples, most first;
    ``stacks`` by samples, most first, summing to ``samples``)."""

    pid: int
    comm: str
    event: str
    rate_hz: int
    interval: float
    samples: int
    lost: int
    hot: tuple[Hot, ...]
    exited: bool
    stacks: tuple[Stack, ...] = ()
    #: Off-CPU: whether it was sampled; per stack the nanoseconds waited (most first),
    #: their sum, the switches seen and the ones the kernel could not store.
    offcpu: bool = False
    waiting: tuple[Stack, ...] = ()
    waited: int = 0
    switches: int = 0
    waits_lost: int = 0

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
    kernel adjusts the period, ``freq``), user mode only, each sample with its user call
    chain, on one thread (not inherited: the kernel maps no buffer of an inherited
    per-task event, ``perf_mmap()`` in kernel/events/core.c)."""
    return Attr(
        type=event.type,
        config=event.config,
        read_format=0,
        sample_period=rate_hz,
        freq=True,
        sample_type=SAMPLE_TYPE,
        exclude_callchain_kernel=True,
        sample_max_stack=MAX_STACK,
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
        #: Off-CPU: the tracepoint's id (None: not sampled), its rings, the waits.
        self._switch = self._switch_tracepoint()
        self._waits_rings: dict[int, tuple[int, SampleRing]] = {}
        self._waits_pages = offcpu.switch_pages(len(tids), delay)
        self._waits = offcpu.Waits(self._resolver)
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

    def _switch_tracepoint(self) -> int | None:
        """The id of ``sched:sched_switch`` where off-CPU time can be sampled; else None,
        and one line says why."""
        why = offcpu.unavailable(self._host)
        if why is None:
            try:
                return offcpu.tracepoint(self._host)
            except EventError as e:
                why = f"off-CPU time not sampled: {e}"
        self._say("where:offcpu", why)
        return None

    def _open_waits(self, tid: int) -> None:
        """The off-CPU event of thread ``tid``; a refusal ends off-CPU sampling, in one
        line."""
        if self._switch is None:
            return
        try:
            fd = perf_event_open(offcpu.switch_attr(self._switch), tid, -1, -1, _FD_CLOEXEC)
        except OSError as e:
            if e.errno != errno.ESRCH:
                self._switch = None
                self._say("where:offcpu", f"off-CPU time not sampled: {e.strerror}")
            return
        try:
            self._waits_rings[tid] = (fd, SampleRing(fd, self._waits_pages, offcpu.SAMPLE_TYPE))
        except OSError as e:
            os.close(fd)
            self._switch = None
            self._say("where:offcpu", f"off-CPU time not sampled: {e.strerror}")

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
                self._rings[tid] = (fd, SampleRing(fd, self._pages, SAMPLE_TYPE))
                opened.append(tid)
                self._open_waits(tid)
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
        chains: Counter[tuple[int, ...]] = Counter()
        lost = 0
        for _fd, ring in self._rings.values():
            drained = ring.drain()
            counts.update(drained.ips)
            chains.update(drained.chains)
            lost += drained.lost
        switched = [ring.drain() for _fd, ring in self._waits_rings.values()]
        listed = set(self._rings)
        if not self._exited:
            self._follow()  # the maps read again: the names below are this refresh's
        waited: Counter[tuple[Site, ...]] = Counter()
        for drained in switched:
            waited.update(self._waits.take(drained))
        self._waits.now(waited, listed - set(self._rings))
        switches, self._waits.switches = self._waits.switches, 0
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
            stacks=self._stacks(chains),
            offcpu=self._switch is not None,
            waiting=tuple(Stack(frames, ns) for frames, ns in waited.most_common()),
            waited=waited.total(),
            switches=switches,
            waits_lost=sum(drained.lost for drained in switched),
        )

    def _stacks(self, chains: Counter[tuple[int, ...]]) -> tuple[Stack, ...]:
        """The samples' call chains named, outermost first, by samples; and the line,
        once, when most are too shallow to have been walked (no frame pointers)."""
        stacks: Counter[tuple[Site, ...]] = Counter()
        shallow: Counter[str] = Counter()
        for chain, n in chains.items():
            frames, user = self._resolver.frames(chain)
            stacks[frames[::-1]] += n
            if user <= SHALLOW and frames:
                shallow[frames[0][1]] += n
        taken = sum(chains.values())
        if taken >= SHALLOW_SAMPLES and shallow.total() > SHALLOW_PART * taken:
            module = shallow.most_common(1)[0][0]
            self._say(
                "where:shallow",
                f"most call chains ({module}) are {SHALLOW} frames deep or fewer: built "
                "without frame pointers? (cc -fno-omit-frame-pointer; tiptop does not "
                "unwind with DWARF, docs/where.md)",
            )
        return tuple(Stack(frames, n) for frames, n in stacks.most_common())

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
        """Close the events of thread ``tid`` (drained already)."""
        for rings in (self._rings, self._waits_rings):
            held = rings.pop(tid, None)
            if held is not None:
                held[1].close()
                os.close(held[0])

    def start(self) -> None:
        """Drop what was sampled so far: the next refresh covers the time from now."""
        for _fd, ring in (*self._rings.values(), *self._waits_rings.values()):
            ring.drain()
        self._waits = offcpu.Waits(self._resolver)
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
    "Stack",
    "TaskProfiler",
    "data_pages",
    "event_for",
    "sampling_attr",
]
