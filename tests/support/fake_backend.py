"""A FAKE counter backend with scripted, hardware-like counts: for tests and demos only.

Nothing here touches the kernel. :class:`FakeBackend` follows the same protocol as the
real one (``tiptop.kernel.backend.Backend``) so the sampler can be tested where the machine
cannot help: hardware counts on a PMU-less VM, multiplexing, errors on demand, and an fd
limit. Counts follow a controllable clock (:class:`FakeClock`), never the wall clock.

Model of one group on one task, ``t`` seconds after it was opened:

* ``time_enabled = t * on_cpu`` (ns): per-task events only advance while the task runs,
  so a task scripted with ``on_cpu=0`` looks asleep;
* ``time_running = time_enabled * mux``: the fraction of that time the PMU actually
  counted this group (perf_event_open(2), "time_enabled ... time_running");
* each member's value is ``count(e) * mux`` where ``count`` is a rate per second or a
  callable of ``e``, the seconds the task spent on a CPU: what the kernel would have
  counted while the group was scheduled. Software groups (leader of type 1) are never
  multiplexed, as in the kernel;
* on a hybrid CPU a generic event carries its core PMU's type in ``config[63:32]``
  (perf_event_open(2), "PERF_TYPE_HARDWARE") and only counts while the task
  runs on that PMU's CPUs: ``FakeTask.cpu_share`` gives that fraction per PMU type, and
  multiplies the group's ``mux`` (its ``time_enabled`` still advances the whole time); an
  event of the PMU's own type (``cpu_core/event=.../``) is filtered the same way.

A group is read as the kernel's are (``Group``): its words (``PERF_FORMAT_GROUP | ID``) by
its leader's fd number. The fake's fd numbers start at :data:`FIRST_FD`, above any real fd
(``fs.nr_open``, proc_sys_fs(5), defaults to that many), and a closed group's numbers are
handed out again lowest first, as open(2) does, so a stale number reads another group;
:meth:`FakeBackend.read_fd` is what ``os.read`` of such a number gives.
"""

from __future__ import annotations

import errno
import functools
import heapq
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Group, GroupReading
from tiptop.kernel.consts import PERF_PMU_TYPE_SHIFT
from tiptop.kernel.errors import translate

#: An event as the fake knows it: ``(type, config)`` of its attr.
EventKey = tuple[int, int]
Count = float | Callable[[float], float]
#: PERF_TYPE_SOFTWARE (include/uapi/linux/perf_event.h).
SOFTWARE = 1
#: The first fake fd number.
FIRST_FD = 1 << 20


def pmu_type(key: EventKey) -> int:
    """The PMU an event counts on: the extended type in ``config[63:32]`` of a generic
    hardware or cache event (types 0 and 3), else its own ``type``."""
    type_, config = key
    return config >> PERF_PMU_TYPE_SHIFT if type_ in (0, 3) else type_


class FakeClock:
    """A clock that only moves when told to (seconds)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeTask:
    """Script for one tid: counts per event, CPU presence and multiplexing."""

    counts: dict[EventKey, Count] = field(default_factory=dict)
    #: Fraction of wall time the task is on a CPU (drives time_enabled).
    on_cpu: float = 1.0
    #: Fraction of enabled time the group is scheduled on the PMU (1.0 = no multiplexing).
    mux: float = 1.0
    #: Once set (a clock time), the task is dead: opens give ESRCH, reads freeze here.
    died_at: float | None = None
    #: Hybrid CPUs: fraction of on-CPU time spent on each core PMU (by PMU type).
    cpu_share: dict[int, float] = field(default_factory=dict)


class FakeGroup:
    """A fake open group; reads come from the owning backend's script and clock."""

    def __init__(
        self,
        backend: FakeBackend,
        tid: int,
        keys: list[EventKey],
        fds: list[int],
        ids: tuple[int, ...],
    ) -> None:
        self._backend = backend
        self.tid = tid
        self.keys = keys
        #: Fake fd numbers, the leader's first; empty once closed.
        self.fds = fds
        self.n_fds = len(fds)
        #: Fake event ids, unique in the backend, in open order.
        self.ids = ids
        self.nbytes = 8 * (3 + 2 * len(keys))
        self.opened_at = backend.clock()

    def read(self) -> GroupReading:
        """Cumulative counts since open, following the script (see the module doc)."""
        if self.n_fds == 0:
            raise translate(OSError(errno.EBADF, "fake group is closed"))
        b = self._backend
        err = b.read_errors.get(self.tid)
        if err is not None:
            raise translate(OSError(err, os.strerror(err)))
        task = b.task(self.tid)
        end = b.clock() if task.died_at is None else min(b.clock(), task.died_at)
        t = max(end - self.opened_at, 0.0)
        enabled = t * task.on_cpu
        # Software events always fit (the software PMU never multiplexes).
        mux = 1.0 if self.keys[0][0] == SOFTWARE else task.mux * b.share(self)
        if task.cpu_share:
            mux *= task.cpu_share.get(pmu_type(self.keys[0]), 1.0)
        if b.never_scheduled(self):  # a counter held elsewhere: it never runs
            zeros = np.zeros(len(self.keys), dtype=np.uint64)
            return GroupReading(zeros, max(int(enabled * 1e9), 1), 0)
        running = enabled * mux
        values = []
        for key in self.keys:
            c = task.counts.get(key, b.default_rate)
            full = c(enabled) if callable(c) else c * enabled
            values.append(int(full * mux))
        return GroupReading(
            np.array(values, dtype=np.uint64), int(enabled * 1e9), int(running * 1e9)
        )

    def words(self) -> bytes:
        """:meth:`read` as the kernel's words: ``nr, time_enabled, time_running,
        {value, id} * nr``."""
        r = self.read()
        m = len(self.keys)
        w = np.empty(3 + 2 * m, np.uint64)
        w[:3] = m, r.time_enabled, r.time_running
        w[3::2] = r.values
        w[4::2] = self.ids
        return w.tobytes()

    def read_raw(self) -> bytes:
        """One read of the leader's fd number, errors as their kinds, a short read EIO."""
        if not self.fds:
            raise translate(OSError(errno.EBADF, "fake group is closed"))
        try:
            buf = self._backend.read_fd(self.fds[0], self.nbytes)
        except OSError as e:
            raise translate(e) from None
        if len(buf) < self.nbytes:
            raise translate(OSError(errno.EIO, f"short read of fake group ({len(buf)} bytes)"))
        return buf

    def bare_read(self) -> Callable[[], bytes]:
        """A read of the leader's fd number (:meth:`FakeBackend.read_fd`): after
        :meth:`close`, EBADF or the words of the group that took the number."""
        return functools.partial(self._backend.read_fd, self.fds[0], self.nbytes)

    def close(self) -> None:
        """Give the fds back to the backend; idempotent."""
        if self.n_fds:
            self._backend.release(self)
            self.fds = []
            self.n_fds = 0


def fake_group(group: Group) -> FakeGroup:
    """``group`` as the FAKE backend made it (a test reads its tid and keys)."""
    assert isinstance(group, FakeGroup), group
    return group


def failing_read(err: int, text: str) -> Callable[[], GroupReading]:
    """A group's ``read`` that fails with ``OSError(err, text)`` every time."""

    def read() -> GroupReading:
        raise OSError(err, text)

    return read


class FakeBackend:
    """A scripted backend (see the module doc). Everything is public for tests to poke.

    ``event_errors`` maps an event key to an errno raised when that event is opened on any
    task (ENOENT: "no such event here"); ``tid_errors`` maps a tid to an errno raised for
    any open on it (EACCES: "not yours"; ESRCH: "gone"); ``max_fds`` makes opens fail with
    EMFILE past that many fds. ``opens`` records every successful ``(tid, attrs)``.

    ``max_group_size`` maps an attr ``type`` (the leader's) to the number of counters of
    that fake PMU: a larger group fails with EINVAL, as x86 ``validate_group()`` does,
    with ``member`` at the first event that does not fit. When the groups of that type
    open on one tid hold more events than the counters, the fake multiplexes them in turn:
    each is scheduled ``1 / number of such groups`` of the time (what the kernel's
    rotation gives groups that cannot run together), on top of the task's scripted ``mux``.
    ``held`` maps a type to counters taken by a pinned system-wide event (the NMI
    watchdog): a group larger than what is left opens but never runs.

    ``perf_metrics`` maps a PMU type to ``(slots, metrics)``, the event-select-and-umask
    codes of its ``slots`` event and of its top-down metric events, to play the kernel's
    rules for them (arch/x86/events/intel/core.c ``intel_pmu_hw_config``): a metric event
    opens only in a group led by that PMU's ``slots`` (EINVAL otherwise), and takes none
    of the ``max_group_size`` counters (arch/x86/events/core.c ``collect_event``).
    """

    def __init__(self, clock: FakeClock | None = None, *, default_rate: Count = 0.0) -> None:
        self.clock = clock or FakeClock()
        self.default_rate = default_rate
        self.tasks: dict[int, FakeTask] = {}
        self.event_errors: dict[EventKey, int] = {}
        self.tid_errors: dict[int, int] = {}
        self.read_errors: dict[int, int] = {}
        self.max_fds: int | None = None
        self.max_group_size: dict[int, int] = {}
        #: Counters of a PMU type held by a pinned system-wide event (the NMI watchdog).
        self.held: dict[int, int] = {}
        self.perf_metrics: dict[int, tuple[int, frozenset[int]]] = {}
        self.open_fds = 0
        self.groups: set[FakeGroup] = set()
        self.opens: list[tuple[int, tuple[Attr, ...]]] = []
        #: Each :meth:`open_from` call's CPU, in order.
        self.moves: list[int | None] = []
        #: ``(tid, CPU)`` of every successful open: the CPU it was made from.
        self.opened_from: list[tuple[int, int | None]] = []
        #: Hand out fake pidfds (``open_pidfd``): off unless a test asks for them.
        self.pidfds = False
        #: FAKE CPU-time clocks (ns) by pid (``run_times``): a pid not here says 0 (cannot
        #: say), so no group is left unread unless a test sets its process's clock.
        self.run_clocks: dict[int, int] = {}
        self._exit_pipes: dict[int, int] = {}
        #: Open groups by their leader's fd number (:meth:`read_fd`).
        self.leaders: dict[int, FakeGroup] = {}
        self._free_fds: list[int] = []  # a heap: the lowest is handed out first
        self._next_fd = FIRST_FD
        self._next_id = 1

    def task(self, tid: int) -> FakeTask:
        """The script of ``tid`` (created empty on first use)."""
        return self.tasks.setdefault(tid, FakeTask())

    def script(
        self,
        tid: int,
        event: EventKey,
        count: Count,
        *,
        on_cpu: float | None = None,
        mux: float | None = None,
    ) -> None:
        """Make ``event`` on ``tid`` count ``count`` (a rate per second or ``f(t)``)."""
        t = self.task(tid)
        t.counts[event] = count
        if on_cpu is not None:
            t.on_cpu = on_cpu
        if mux is not None:
            t.mux = mux

    def share(self, group: FakeGroup) -> float:
        """Fraction of time ``group`` is scheduled on its fake PMU (1.0 unless the groups
        of its type on its tid need more than ``max_group_size`` counters together)."""
        type_ = group.keys[0][0]
        counters = self.max_group_size.get(type_)
        if counters is None:
            return 1.0
        peers = [g for g in self.groups if g.tid == group.tid and g.keys[0][0] == type_]
        if sum(self.counters_used(g.keys) for g in peers) <= counters:
            return 1.0
        return 1.0 / len(peers)

    def never_scheduled(self, group: FakeGroup) -> bool:
        """Whether ``group`` needs more counters than its fake PMU has free: ``held``
        counters of a type are taken by a pinned system-wide event (the NMI watchdog), so
        such a group opens (the kernel checks it against an empty PMU) but never runs."""
        type_ = group.keys[0][0]
        counters = self.max_group_size.get(type_)
        return counters is not None and self.counters_used(group.keys) > counters - self.held.get(
            type_, 0
        )

    def kill(self, tid: int) -> None:
        """The task exits now: later opens fail with ESRCH, reads keep the final counts."""
        self.task(tid).died_at = self.clock()

    def open_pidfd(self, tid: int, thread: bool) -> int | None:
        """A FAKE pidfd: the read end of a pipe, readable once :meth:`exit_task` says the
        task exited (a real pidfd turns readable when its task exits)."""
        if not self.pidfds:
            return None
        r, w = os.pipe()
        self._exit_pipes[tid] = w
        return r

    def run_times(self, pids: Sequence[int]) -> list[int]:
        """The FAKE CPU-time clock of each of ``pids`` (:attr:`run_clocks`), 0 where unset."""
        return [self.run_clocks.get(pid, 0) for pid in pids]

    def open_from(self, cpu: int | None) -> None:
        """Where the opens that follow are made from: a FAKE move, recorded in
        :attr:`moves` and with each open in :attr:`opened_from`."""
        self.moves.append(cpu)

    @property
    def cpu(self) -> int | None:
        """The CPU the opens are made from now (the last :meth:`open_from`; None: unmoved)."""
        return self.moves[-1] if self.moves else None

    def exit_task(self, tid: int) -> None:
        """Make ``tid``'s fake pidfd readable, as its task's exit would."""
        os.write(self._exit_pipes.pop(tid), b"x")

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> FakeGroup:
        """Open a fake group, applying the scripted errors in the kernel's order."""
        if not attrs:
            raise ValueError("a counter group needs at least one event")
        for k, a in enumerate(attrs):
            err = self.event_errors.get((a.type, a.config))
            if err is not None:
                e = OSError(err, os.strerror(err))
                e.member = k  # type: ignore[attr-defined]
                raise translate(e)
        for k, a in enumerate(attrs):
            if self.is_metric((a.type, a.config)) and not self.leads_metrics(attrs[0], a):
                e = OSError(errno.EINVAL, os.strerror(errno.EINVAL))
                e.member = k  # type: ignore[attr-defined]
                raise translate(e)
        limit = self.max_group_size.get(attrs[0].type)
        if limit is not None and self.counters_used([(a.type, a.config) for a in attrs]) > limit:
            e = OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            e.member = limit  # type: ignore[attr-defined]
            raise translate(e)
        err = self.tid_errors.get(tid)
        if err is None and tid in self.tasks and self.tasks[tid].died_at is not None:
            err = errno.ESRCH
        if err is None and self.max_fds is not None and self.open_fds + len(attrs) > self.max_fds:
            err = errno.EMFILE
        if err is not None:
            e = OSError(err, os.strerror(err))
            e.member = 0  # type: ignore[attr-defined]
            raise translate(e)
        fds = [heapq.heappop(self._free_fds) if self._free_fds else self._new_fd() for _ in attrs]
        ids = tuple(range(self._next_id, self._next_id + len(attrs)))
        self._next_id += len(attrs)
        g = FakeGroup(self, tid, [(a.type, a.config) for a in attrs], fds, ids)
        self.open_fds += len(attrs)
        self.groups.add(g)
        self.leaders[fds[0]] = g
        self.opens.append((tid, tuple(attrs)))
        self.opened_from.append((tid, self.cpu))
        return g

    def _new_fd(self) -> int:
        self._next_fd += 1
        return self._next_fd - 1

    def release(self, group: FakeGroup) -> None:
        """Take back ``group``'s fds (its ``close``)."""
        self.open_fds -= group.n_fds
        self.groups.discard(group)
        del self.leaders[group.fds[0]]
        for fd in group.fds:
            heapq.heappush(self._free_fds, fd)

    # ------------------------------------------------------------ reads
    def read_fd(self, fd: int, nbytes: int) -> bytes:
        """What ``os.read(fd, nbytes)`` gives for a fake leader's fd number: its group's
        words now; ``OSError`` untranslated: EBADF for a number no open group leads,
        ENOSPC for a buffer too small (kernel/events/core.c ``__perf_read()``), the errno
        ``read_errors`` scripts for its task, but 0 bytes for EIO (the kernel's read of a
        pinned event in error state, perf_event_open(2) "pinned")."""
        g = self.leaders.get(fd)
        if g is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        err = self.read_errors.get(g.tid)
        if err == errno.EIO:
            return b""
        if err is not None:
            raise OSError(err, os.strerror(err))
        if nbytes < g.nbytes:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return g.words()

    def read_leaders(self, fds: Sequence[int], nbytes: int) -> list[bytes]:
        """:meth:`read_fd` of each of ``fds`` in order (``Backend.read_leaders``)."""
        return [self.read_fd(fd, nbytes) for fd in fds]

    # ------------------------------------------------------------ perf metrics
    def is_metric(self, key: EventKey) -> bool:
        """Whether ``key`` is a top-down metric event of a PMU in ``perf_metrics``."""
        entry = self.perf_metrics.get(key[0])
        return entry is not None and key[1] & 0xFFFF in entry[1]

    def leads_metrics(self, leader: Attr, metric: Attr) -> bool:
        """Whether ``leader`` is the ``slots`` event of ``metric``'s PMU."""
        entry = self.perf_metrics.get(metric.type)
        return (
            entry is not None
            and leader.type == metric.type
            and (leader.config & 0xFFFF == entry[0])
        )

    def counters_used(self, keys: Sequence[EventKey]) -> int:
        """How many of the PMU's counters a group of ``keys`` takes (metrics take none)."""
        return sum(1 for k in keys if not self.is_metric(k))
