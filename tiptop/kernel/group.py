"""The kernel backend: one perf event group per task, read with one ``read()``.

Follows ``tiptop/kernel/backend.py``. Every group uses ``PERF_FORMAT_GROUP | ID |
TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING``, so a read returns
``nr, time_enabled, time_running, {value, id} * nr`` (perf_event_open(2), "read_format"),
which is parsed with ``numpy.frombuffer``. Values are mapped to members by the ids from
``PERF_EVENT_IOC_ID`` rather than by position. Scaling helpers work on numpy arrays of
interval deltas (never on cumulative values: ``PERF_EVENT_IOC_RESET`` does not reset the
times, perf_event_open(2)).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
from collections.abc import Sequence

import numpy as np

from tiptop.kernel._ffi import perf_event_open
from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
from tiptop.kernel.backend import GroupReading
from tiptop.kernel.consts import PERF_FLAG_FD_CLOEXEC, PERF_IOC_FLAG_GROUP, Ioctl
from tiptop.kernel.errors import translated

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


def pack_group_read(
    values: Sequence[int], ids: Sequence[int], time_enabled: int, time_running: int
) -> bytes:
    """The bytes the kernel would return for a group read (inverse of parse_group_read)."""
    words = [len(values), time_enabled, time_running]
    for v, i in zip(values, ids, strict=True):
        words += [v, i]
    return struct.pack(f"<{len(words)}Q", *words)


def event_id(fd: int) -> int:
    """The kernel's unique id of an open event (``PERF_EVENT_IOC_ID``, Linux 3.12+)."""
    buf = fcntl.ioctl(fd, Ioctl.ID, b"\0" * 8)
    return int.from_bytes(buf, "little")


class CounterGroup:
    """An open group on one task: the leader's fd plus members'; a context manager."""

    __slots__ = ("_bufsize", "_ids", "fds", "n_fds", "tid")

    def __init__(self, tid: int, fds: list[int], ids: list[int]) -> None:
        self.tid = tid
        self.fds = fds
        self.n_fds = len(fds)
        self._ids = np.asarray(ids, dtype=_U64)
        self._bufsize = group_read_size(len(fds))

    @property
    def ids(self) -> np.ndarray:
        """Kernel event ids, members in open order."""
        return self._ids

    def read_raw(self) -> bytes:
        """One ``read()`` of the leader; ``OSError`` on failure or a short read."""
        if not self.fds:
            raise OSError(errno.EBADF, "counter group is closed")
        with translated():
            buf = os.read(self.fds[0], self._bufsize)
        if len(buf) < self._bufsize:
            # 0 bytes: a pinned event in error state (perf_event_open(2), "pinned").
            raise OSError(errno.EIO, f"short read of perf group ({len(buf)} bytes)")
        return buf

    def read(self) -> GroupReading:
        """Cumulative counts and times since the group was opened."""
        try:
            return parse_group_read(self.read_raw(), self._ids)
        except ValueError as e:
            raise OSError(errno.EIO, str(e)) from None

    def enable(self) -> None:
        """Start the whole group (``PERF_EVENT_IOC_ENABLE`` with ``PERF_IOC_FLAG_GROUP``)."""
        fcntl.ioctl(self.fds[0], Ioctl.ENABLE, PERF_IOC_FLAG_GROUP)

    def disable(self) -> None:
        """Stop the whole group (``PERF_EVENT_IOC_DISABLE`` with ``PERF_IOC_FLAG_GROUP``)."""
        fcntl.ioctl(self.fds[0], Ioctl.DISABLE, PERF_IOC_FLAG_GROUP)

    def close(self) -> None:
        """Close every fd (members first); idempotent."""
        fds, self.fds = self.fds, []
        self.n_fds = 0
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> CounterGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def open_group(tid: int, attrs: Sequence[Attr], *, cpu: int = -1) -> CounterGroup:
    """Open ``attrs[0]`` as leader and the others as members on ``tid`` (0 = caller).

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
    first = attrs[0]
    enable_after = not first.disabled and not first.enable_on_exec
    fds: list[int] = []
    try:
        for k, attr in enumerate(attrs):
            if attr.read_format != GROUP_READ_FORMAT:
                attr = attr.replace(read_format=GROUP_READ_FORMAT)
            if k == 0 and enable_after:
                attr = attr.replace(disabled=True)
            leader = fds[0] if fds else -1
            try:
                fds.append(perf_event_open(attr, tid, cpu, leader, PERF_FLAG_FD_CLOEXEC))
            except OSError as e:
                e.member = k  # type: ignore[attr-defined]
                raise
        ids = [event_id(fd) for fd in fds]
        if enable_after:
            fcntl.ioctl(fds[0], Ioctl.ENABLE, PERF_IOC_FLAG_GROUP)
    except BaseException:
        for fd in reversed(fds):
            os.close(fd)
        raise
    return CounterGroup(tid, fds, ids)


class PerfBackend:
    """The real kernel backend (``tiptop.kernel.backend.Backend``)."""

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> CounterGroup:
        """See :func:`open_group`; errors come as their kinds (``tiptop.kernel.errors``)."""
        with translated():
            return open_group(tid, attrs)


# ----------------------------------------------------------------------- scaling helpers


def _per_row(times: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Times of shape (n,) broadcast against values of shape (n, k)."""
    t = np.asarray(times, dtype=np.float64)
    if like.ndim == 2 and t.ndim == 1:
        t = t[:, None]
    return t


def scale(
    delta_value: np.ndarray, delta_enabled: np.ndarray, delta_running: np.ndarray
) -> np.ndarray:
    """Multiplexing estimate ``v * Δenabled / Δrunning`` where ``0 < Δrunning < Δenabled``.

    Elsewhere the value is returned unscaled (use :func:`not_counted` for Δrunning == 0).
    The perf_event_open(2) rule, applied to interval deltas as perf stat does. Values may
    be (n,) with times (n,), or (n, k) with per-group times (n,).
    """
    v = np.asarray(delta_value, dtype=np.float64)
    ena = _per_row(delta_enabled, v)
    run = _per_row(delta_running, v)
    mux = (run > 0) & (run < ena)
    factor = np.divide(ena, run, out=np.ones(np.broadcast(ena, run).shape), where=mux)
    return v * factor


def running_fraction(delta_enabled: np.ndarray, delta_running: np.ndarray) -> np.ndarray:
    """``Δrunning / Δenabled`` in [0, 1]; 1.0 where nothing was enabled (no information)."""
    ena = np.asarray(delta_enabled, dtype=np.float64)
    run = np.asarray(delta_running, dtype=np.float64)
    frac = np.divide(run, ena, out=np.ones(np.broadcast(ena, run).shape), where=ena > 0)
    return np.minimum(frac, 1.0)


def not_counted(delta_running: np.ndarray) -> np.ndarray:
    """True where the group never ran in the interval (Δrunning == 0): shown as ``?``."""
    return np.asarray(delta_running) == 0


def multiplexed(delta_enabled: np.ndarray, delta_running: np.ndarray) -> np.ndarray:
    """True where the group ran for part of the interval only (``0 < Δrun < Δena``)."""
    ena = np.asarray(delta_enabled)
    run = np.asarray(delta_running)
    return (run > 0) & (run < ena)
