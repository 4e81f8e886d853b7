"""The kernel backend: one perf event group per task, read with one ``read()``.

Follows ``tiptop/kernel/backend.py``. Every group uses ``PERF_FORMAT_GROUP | ID |
TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING``, so a read returns
``nr, time_enabled, time_running, {value, id} * nr`` (perf_event_open(2), "read_format"),
which is parsed with ``numpy.frombuffer``. The kernel lists the leader, then the members
in the order they joined (kernel/events/core.c, ``perf_read_group()``), which is open order;
a group's ids (``PERF_EVENT_IOC_ID``) are asked only when :meth:`CounterGroup.read` maps
values by them, not at each open.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
from collections.abc import Callable, Sequence
from itertools import repeat

import numpy as np

from tiptop.kernel._ffi import CData, c_flags, c_int, new_attr, open_struct
from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
from tiptop.kernel.backend import GroupReading
from tiptop.kernel.consts import (
    PERF_FLAG_FD_CLOEXEC,
    PERF_FLAG_PID_CGROUP,
    PERF_IOC_FLAG_GROUP,
    Ioctl,
)
from tiptop.kernel.errors import translate, translated
from tiptop.kernel.procfs import open_pidfd, process_cpu_times
from tiptop.readonly import readonly

_U64 = np.dtype("<u8")
_HEADER = 3  # nr, time_enabled, time_running


def group_read_size(n: int) -> int:
    """Bytes one ``PERF_FORMAT_GROUP | ID`` read of ``n`` members takes: 24 + 16*n."""
    return 8 * (_HEADER + 2 * n)


def parse_group_read(buf: bytes, ids: Sequence[int] | np.ndarray) -> GroupReading:
    """Parse one group read; ``values`` come out in the order of ``ids`` (open order).

    Raises ``ValueError`` when the buffer is short, or an id is missing from it (a group
    whose layout changed under us).
    """
    words = np.frombuffer(buf, dtype=_U64, count=len(buf) // 8)
    if words.size < _HEADER:
        raise ValueError(f"group read of {len(buf)} bytes is too short")
    nr = int(words[0])
    if words.size < _HEADER + 2 * nr:
        raise ValueError(f"group read of {len(buf)} bytes is too short for nr={nr}")
    pairs = words[_HEADER : _HEADER + 2 * nr].reshape(nr, 2)
    want = np.asarray(ids, dtype=_U64)
    got = pairs[:, 1]
    if got.size == want.size and np.array_equal(got, want):
        values = pairs[:, 0].copy()
    else:
        where = {int(i): k for k, i in enumerate(got)}
        try:
            order = [where[int(i)] for i in want]
        except KeyError as e:
            raise ValueError(f"event id {e.args[0]} missing from the group read") from None
        values = pairs[order, 0].copy()
    return GroupReading(values=values, time_enabled=int(words[1]), time_running=int(words[2]))


def event_id(fd: int) -> int:
    """The kernel's unique id of an open event (``PERF_EVENT_IOC_ID``, Linux 3.12+)."""
    buf = fcntl.ioctl(fd, Ioctl.ID, b"\0" * 8)
    return int.from_bytes(buf, "little")


class CounterGroup:
    """An open group on one task: the leader's fd plus members'; a context manager."""

    __slots__ = ("_bufsize", "_ids", "fds", "n_fds", "tid")

    def __init__(self, tid: int, fds: list[int]) -> None:
        self.tid = tid
        self.fds = fds
        self.n_fds = len(fds)
        self._ids: tuple[int, ...] | None = None
        self._bufsize = group_read_size(len(fds))

    @property
    def ids(self) -> tuple[int, ...]:
        """Kernel event ids, members in open order: asked of the kernel at the first use
        (one ioctl a member, which a refresh's reads by position never need), then kept,
        as an open event's id never changes."""
        if self._ids is None:
            self._ids = tuple(event_id(fd) for fd in self.fds)
        return self._ids

    def read_raw(self) -> bytes:
        """One ``read()`` of the leader; ``OSError`` on failure or a short read."""
        if not self.fds:
            raise OSError(errno.EBADF, "counter group is closed")
        try:  # not ``with translated()``: a context manager's enter and exit, per task
            buf = os.read(self.fds[0], self._bufsize)
        except OSError as e:
            raise translate(e) from None
        if len(buf) < self._bufsize:
            # 0 bytes: a pinned event in error state (perf_event_open(2), "pinned").
            raise OSError(errno.EIO, f"short read of perf group ({len(buf)} bytes)")
        return buf

    def bare_read(self) -> Callable[[], bytes]:
        """A read of the leader as a call with nothing around it: ``os.read`` of its fd,
        errors untranslated and no check of the length (the caller checks both; what
        a refresh calls once per task). The call holds the fd's number: it must not be
        used after ``close`` (``engine.count.units.Unit.close`` replaces it), or it would
        read whatever file took that number."""
        return functools.partial(os.read, self.fds[0], self._bufsize)

    def read(self) -> GroupReading:
        """Cumulative counts and times since the group was opened."""
        try:
            return parse_group_read(self.read_raw(), self.ids)
        except ValueError as e:
            raise OSError(errno.EIO, str(e)) from None

    def close(self) -> None:
        """Close every fd (members first); idempotent."""
        fds, self.fds = self.fds, []
        self.n_fds = 0
        for fd in reversed(fds):
            # try, not contextlib.suppress: a context manager's enter and exit per fd,
            # where a try costs nothing until it catches ("zero-cost" exceptions, What's
            # New in Python 3.11); a run's end closes thousands.
            try:  # noqa: SIM105
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> CounterGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _enabled_after(attrs: Sequence[Attr]) -> bool:
    """Whether :func:`open_group` opens the leader disabled and enables the whole group
    once every member is in: a leader asked to start enabled."""
    return not attrs[0].disabled and not attrs[0].enable_on_exec


@readonly
class OpenedGroup:
    """What :func:`open_group` opens for the attrs it is given: ``attrs`` with the group
    read format on each and the leader ``disabled`` when the group is enabled once whole
    (``enable_after``, :func:`_enabled_after`), and their C structs, filled."""

    attrs: tuple[Attr, ...]
    structs: tuple[CData, ...]
    enable_after: bool


#: The most attrs tuples :class:`OpenedAttrs` keeps by identity.
GIVEN_KEPT = 64


class OpenedAttrs:
    """The :class:`OpenedGroup` for the attrs :func:`open_group` is given, kept by the given
    attrs' value.

    A plan opens the same attrs on every task: each ``Attr.replace`` would make new Attrs,
    and each open a struct to fill. What is made depends on the given attrs only, which
    are read-only and compared by value (a list is looked up as the tuple of what it holds
    when called), and the kernel only reads a struct (but for ``size``, which it sets to
    the one it wants once for all: ``_ffi.open_struct``), so an entry is never stale; the
    memo grows with the distinct groups opened (a few per screen, whatever the number of
    tasks).

    A plan hands the very same tuple for every task: looked up first by identity (one dict
    lookup in C, where a lookup by value hashes and compares each ``Attr`` in Python),
    that tuple kept beside its group so that its ``id`` is never another's. Each new plan
    (a screen switched to) brings new tuples: past ``GIVEN_KEPT`` they are all forgotten,
    and found again by value."""

    def __init__(self) -> None:
        self._made: dict[tuple[Attr, ...], OpenedGroup] = {}
        self._given: dict[int, tuple[Sequence[Attr], OpenedGroup]] = {}

    def __call__(self, attrs: Sequence[Attr]) -> OpenedGroup:
        given = self._given.get(id(attrs))
        if given is not None and given[0] is attrs:
            return given[1]
        key = attrs if type(attrs) is tuple else tuple(attrs)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = self._make(key)
        if type(attrs) is tuple:  # a list may change: only tuples are kept by identity
            if len(self._given) >= GIVEN_KEPT:
                self._given.clear()
            self._given[id(attrs)] = (attrs, made)
        return made

    @staticmethod
    def _make(attrs: tuple[Attr, ...]) -> OpenedGroup:
        enable_after = _enabled_after(attrs)
        made = []
        for k, attr in enumerate(attrs):
            if attr.read_format != GROUP_READ_FORMAT:
                attr = attr.replace(read_format=GROUP_READ_FORMAT)
            if k == 0 and enable_after:
                attr = attr.replace(disabled=True)
            made.append(attr)
        return OpenedGroup(tuple(made), tuple(new_attr(a) for a in made), enable_after)


#: What every group of this process is opened with (:func:`open_group`).
_as_opened = OpenedAttrs()
#: A leader's ``group_fd``: none (perf_event_open(2)).
_NO_GROUP = c_int(-1)


def open_group(tid: int, attrs: Sequence[Attr], *, cpu: int = -1, flags: int = 0) -> CounterGroup:
    """Open ``attrs[0]`` as leader and the others as members on ``tid`` (0 = caller), on
    ``cpu`` (-1: wherever the task runs), with the open ``flags`` besides
    ``PERF_FLAG_FD_CLOEXEC`` (``PERF_FLAG_PID_CGROUP``: ``tid`` is then a cgroup
    directory's fd, :func:`open_cgroup_group`).

    Every attr gets the group read format. On failure everything opened is closed and the
    kernel's ``OSError`` is re-raised with ``.member`` set to the failing index.

    A leader asked to start enabled is opened ``disabled=1`` and the whole group is
    enabled with one ``PERF_EVENT_IOC_ENABLE`` / ``PERF_IOC_FLAG_GROUP`` once every member
    is in (perf_event_open(2), "Typical sequence"). Measured on 6.18: a member joining an
    already running group of another software PMU (page-faults under a task-clock leader)
    is never scheduled in (time_running stays 0, count 0), so this is not optional. A
    leader with ``disabled=1`` or ``enable_on_exec=1`` is left to the caller.
    """
    if not attrs:
        raise ValueError("a counter group needs at least one event")
    group = _as_opened(attrs)
    # Each argument cast to its C type once for the whole group (_ffi.open_struct).
    on, where, how = c_int(tid), c_int(cpu), c_flags(PERF_FLAG_FD_CLOEXEC | flags)
    leader = _NO_GROUP
    fds: list[int] = []
    opened = False
    try:
        for k, struct in enumerate(group.structs):
            try:
                fds.append(open_struct(struct, on, where, leader, how))
            except OSError as e:
                # The failing member's index rides on the kernel's OSError to
                # kernel/errors.translate(); OSError declares no such attribute.
                e.member = k  # type: ignore[attr-defined]
                raise
            if k == 0:
                leader = c_int(fds[0])
        if group.enable_after:
            fcntl.ioctl(fds[0], Ioctl.ENABLE, PERF_IOC_FLAG_GROUP)
        opened = True
    finally:
        if not opened:  # whatever stopped us, nothing stays open
            for fd in reversed(fds):
                os.close(fd)
    return CounterGroup(tid, fds)


def open_cgroup_group(cgroup_fd: int, cpu: int, attrs: Sequence[Attr]) -> CounterGroup:
    """A group counting every task of one cgroup on one CPU: ``cgroup_fd`` an fd of the
    cgroup's directory in a hierarchy with the ``perf_event`` controller (cgroup v2's, or
    v1's ``perf_event``), ``cpu`` >= 0 (perf_event_open(2), ``PERF_FLAG_PID_CGROUP``: "per-
    container system-wide monitoring"; ``perf stat -G``). The kernel counts the cgroup and
    its descendants. Errors come as their kinds (``tiptop.kernel.errors``)."""
    with translated():
        return open_group(cgroup_fd, attrs, cpu=cpu, flags=PERF_FLAG_PID_CGROUP)


class PerfBackend:
    """The real kernel backend (``tiptop.kernel.backend.Backend``)."""

    def __init__(self) -> None:
        #: The CPUs the calling thread was allowed before :meth:`open_from` moved it: read
        #: at the first move of a batch of opens, given back and forgotten at its end.
        self._allowed: set[int] | None = None

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> CounterGroup:
        """See :func:`open_group`; errors come as their kinds (``tiptop.kernel.errors``)."""
        try:  # not ``with translated()``: a context manager's enter and exit, per task
            return open_group(tid, attrs)
        except OSError as e:
            raise translate(e) from None

    @staticmethod
    def read_leaders(fds: Sequence[int], nbytes: int) -> list[bytes]:
        """One ``os.read`` of ``nbytes`` from each of ``fds``, in order (see the protocol:
        errors untranslated, lengths unchecked, none of ``fds`` closed)."""
        return list(map(os.read, fds, repeat(nbytes, len(fds))))

    def open_pidfd(self, tid: int, thread: bool) -> int | None:
        """A pidfd that tells when ``tid`` has exited (``procfs.open_pidfd``)."""
        return open_pidfd(tid, thread)

    @staticmethod
    def run_times(pids: Sequence[int]) -> list[int]:
        """Each process's CPU-time clock (``procfs.process_cpu_times``)."""
        return process_cpu_times(pids)

    def open_from(self, cpu: int | None) -> None:
        """Run the calling thread on CPU ``cpu`` (sched_setaffinity(2)) until
        ``open_from(None)`` gives it back the CPUs it was allowed before the first move.

        The kernel installs a task's first event, and enables a group, by a function call
        on the CPU the task last ran on (kernel/events/core.c ``perf_install_in_context``
        and ``event_function_call``, through ``task_function_call``): a cross-CPU
        interrupt whose handling the opener waits for, or a plain call where that CPU is
        its own (kernel/smp.c ``smp_call_function_single``). Opening the tasks that last
        ran on a CPU from that CPU spares two such interrupts a task
        (benchmarks/README.md has the figures). A CPU this thread may not run on is not
        moved to; a move the kernel refuses (an offline CPU) is left undone."""
        if cpu is None:
            if self._allowed is not None:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(0, self._allowed)
                self._allowed = None
            return
        if self._allowed is None:
            self._allowed = os.sched_getaffinity(0)
        if cpu in self._allowed:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, (cpu,))
