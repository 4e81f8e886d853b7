"""A sampling event's ring buffer, read with :mod:`mmap`: the records of one
``perf_event_open`` fd whose samples carry ``PERF_SAMPLE_IP | PERF_SAMPLE_TID`` and, when
asked, ``PERF_SAMPLE_TIME`` and ``PERF_SAMPLE_CALLCHAIN`` (``--where``), and the
``PERF_RECORD_SWITCH`` records of an event opened with ``context_switch`` and
``sample_id_all`` (the off-CPU time of ``--where``).

The layout is perf_event_open(2), "MMAP layout": one metadata page (``struct
perf_event_mmap_page``; ``data_head`` at byte 1024, ``data_tail`` at 1032, ``data_offset``
and ``data_size`` after them) and ``2^n`` data pages. The kernel writes records and then
advances ``data_head``; the reader reads ``data_head``, then the records, then writes
``data_tail`` so that the kernel may reuse the space. Mapped writable, the buffer is never
overwritten: when it is full the kernel drops samples and writes one ``PERF_RECORD_LOST``
saying how many, which :meth:`SampleRing.drain` adds up.

A sample's fields come in the order of their ``PERF_SAMPLE_*`` bits (perf_event_open(2),
"PERF_RECORD_SAMPLE"): ``ip``, ``pid, tid``, ``time``, then the call chain as ``nr`` and
``nr`` addresses, the innermost first, in which values from ``PERF_CONTEXT_MAX`` up
(``PERF_CONTEXT_KERNEL``, ``PERF_CONTEXT_USER``) mark where the kernel's part and the
user's part begin (include/uapi/linux/perf_event.h). A switch record's ``sample_id``
(``pid, tid``, ``time``) follows its header; ``PERF_RECORD_MISC_SWITCH_OUT`` in its
``misc`` says the task left the CPU, its absence that it came back.

Python cannot issue the ``rmb()`` that the man page puts between reading ``data_head`` and
reading the records. On x86 loads are not reordered with other loads (Intel SDM vol. 3,
8.2.2), so none is needed; elsewhere a record read before its bytes were visible would show
a size that does not fit, and the rest of that read is then dropped and counted as lost
rather than misread.
"""

from __future__ import annotations

import mmap
import struct

from tiptop.kernel.attr import SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME
from tiptop.readonly import readonly

#: ``enum perf_event_type`` (include/uapi/linux/perf_event.h).
RECORD_LOST = 2
RECORD_SAMPLE = 9
RECORD_SWITCH = 14
#: ``PERF_RECORD_MISC_SWITCH_OUT``: a switch record's task left the CPU.
MISC_SWITCH_OUT = 1 << 13
#: ``enum perf_callchain_context``: call-chain values from here up mark a context.
CONTEXT_MAX = 2**64 - 4095
CONTEXT_KERNEL = 2**64 - 128
CONTEXT_USER = 2**64 - 512
#: The sample fields this reader knows, in their record order.
KNOWN_SAMPLE_TYPE = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN

_HEAD_AT = 1024  # struct perf_event_mmap_page: data_head, data_tail, data_offset, data_size
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<IHH")  # struct perf_event_header: type, misc, size
_SAMPLE = struct.Struct("<QII")  # PERF_SAMPLE_IP, PERF_SAMPLE_TID (pid, tid)
_LOST = struct.Struct("<QQ")  # id, lost
_ID = struct.Struct("<IIQ")  # sample_id: pid, tid, time


@readonly
class Switch:
    """One ``PERF_RECORD_SWITCH``: thread ``tid`` left the CPU (``out``) or came back, at
    ``time`` (ns, on the event's clock)."""

    tid: int
    time: int
    out: bool


@readonly
class Drained:
    """What one :meth:`SampleRing.drain` found: each sample's instruction pointer and
    thread id, in order, its time and call chain where asked (else empty lists), the
    switch records, and how many samples the kernel could not store."""

    ips: list[int]
    tids: list[int]
    lost: int
    times: list[int]
    #: Per sample, its call chain as the kernel gave it (context marks included).
    chains: list[tuple[int, ...]]
    switches: list[Switch]


class SampleRing:
    """The ring buffer of one sampling fd (``1 + data_pages`` pages mapped shared) whose
    samples carry the fields of ``sample_type`` (within :data:`KNOWN_SAMPLE_TYPE`); the fd
    stays the caller's. ``data_pages`` must be a power of two (perf_event_open(2))."""

    def __init__(self, fd: int, data_pages: int, sample_type: int = SAMPLE_IP | SAMPLE_TID) -> None:
        if data_pages < 1 or data_pages & (data_pages - 1):
            raise ValueError(f"data_pages must be a power of two, not {data_pages}")
        if sample_type & ~KNOWN_SAMPLE_TYPE or sample_type & 3 != 3:
            raise ValueError(f"sample fields {sample_type:#x} are not read here")
        self.sample_type = sample_type
        page = mmap.PAGESIZE
        self._map = mmap.mmap(
            fd, (1 + data_pages) * page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
        )
        offset = _U64.unpack_from(self._map, _HEAD_AT + 16)[0]
        size = _U64.unpack_from(self._map, _HEAD_AT + 24)[0]
        # Kernels before 4.1 leave data_offset/data_size zero: the data starts a page in.
        self._offset = offset or page
        self._size = size or data_pages * page

    def drain(self) -> Drained:
        """The records written since the last drain, their space handed back."""
        head = _U64.unpack_from(self._map, _HEAD_AT)[0]
        tail = _U64.unpack_from(self._map, _HEAD_AT + 8)[0]
        size = self._size
        start, end = tail % size, head % size
        if head - tail >= size:  # full to the byte: the copy is the whole buffer
            end = start
        base = self._offset
        if head == tail:
            data = b""
        elif start < end:
            data = self._map[base + start : base + end]
        else:
            data = self._map[base + start : base + size] + self._map[base : base + end]
        drained = parse(data, self.sample_type)
        _U64.pack_into(self._map, _HEAD_AT + 8, head)
        return drained

    def close(self) -> None:
        """Unmap the buffer (the fd is closed by its owner)."""
        self._map.close()


def parse(data: bytes, sample_type: int = SAMPLE_IP | SAMPLE_TID) -> Drained:
    """Sample, lost and switch records of ``data`` whose samples carry ``sample_type``'s
    fields; others (none are asked for) are skipped. A record whose size does not fit ends
    the parse, and a sample is counted lost for it; so is a sample shorter than its
    fields."""
    timed = bool(sample_type & SAMPLE_TIME)
    chained = bool(sample_type & SAMPLE_CALLCHAIN)
    out = Drained([], [], 0, [], [], [])
    lost = 0
    at, n = 0, len(data)
    while at + _HEADER.size <= n:
        kind, misc, size = _HEADER.unpack_from(data, at)
        if size < _HEADER.size or at + size > n:
            lost += 1
            break
        body = at + _HEADER.size
        if kind == RECORD_SAMPLE:
            sample = _sample(data[body : at + size], timed, chained)
            if sample is None:
                lost += 1
            else:
                out.ips.append(sample[0])
                out.tids.append(sample[1])
                if timed:
                    out.times.append(sample[2])
                if chained:
                    out.chains.append(sample[3])
        elif kind == RECORD_LOST and size >= _HEADER.size + _LOST.size:
            lost += _LOST.unpack_from(data, body)[1]
        elif kind == RECORD_SWITCH and size >= _HEADER.size + _ID.size:
            _pid, tid, when = _ID.unpack_from(data, body)
            out.switches.append(Switch(tid, when, bool(misc & MISC_SWITCH_OUT)))
        at += size
    return Drained(out.ips, out.tids, lost, out.times, out.chains, out.switches)


def _sample(
    body: bytes, timed: bool, chained: bool
) -> tuple[int, int, int, tuple[int, ...]] | None:
    """``(ip, tid, time, chain)`` of a sample record's ``body`` (0 and () for the fields
    not asked for); None when it is shorter than its fields say."""
    fixed = _SAMPLE.size + 8 * timed + 8 * chained
    if len(body) < fixed:
        return None
    ip, _pid, tid = _SAMPLE.unpack_from(body, 0)
    at = _SAMPLE.size
    when = 0
    if timed:
        when = _U64.unpack_from(body, at)[0]
        at += 8
    chain: tuple[int, ...] = ()
    if chained:
        nr = _U64.unpack_from(body, at)[0]
        at += 8
        if at + 8 * nr > len(body):
            return None
        chain = struct.unpack_from(f"<{nr}Q", body, at)
    return ip, tid, when, chain


__all__ = [
    "CONTEXT_KERNEL",
    "CONTEXT_MAX",
    "CONTEXT_USER",
    "RECORD_LOST",
    "RECORD_SAMPLE",
    "RECORD_SWITCH",
    "Drained",
    "SampleRing",
    "Switch",
    "parse",
]
