"""A sampling event's ring buffer, read with :mod:`mmap`: the samples of one
``perf_event_open`` fd opened with ``PERF_SAMPLE_IP | PERF_SAMPLE_TID`` (``--where``).

The layout is perf_event_open(2), "MMAP layout": one metadata page (``struct
perf_event_mmap_page``; ``data_head`` at byte 1024, ``data_tail`` at 1032, ``data_offset``
and ``data_size`` after them) and ``2^n`` data pages. The kernel writes records and then
advances ``data_head``; the reader reads ``data_head``, then the records, then writes
``data_tail`` so that the kernel may reuse the space. Mapped writable, the buffer is never
overwritten: when it is full the kernel drops samples and writes one ``PERF_RECORD_LOST``
saying how many, which :meth:`SampleRing.drain` adds up.

Python cannot issue the ``rmb()`` that the man page puts between reading ``data_head`` and
reading the records. On x86 loads are not reordered with other loads (Intel SDM vol. 3,
8.2.2), so none is needed; elsewhere a record read before its bytes were visible would show
a size that does not fit, and the rest of that read is then dropped and counted as lost
rather than misread.
"""

from __future__ import annotations

import mmap
import struct

from tiptop.readonly import readonly

#: ``enum perf_event_type`` (include/uapi/linux/perf_event.h).
RECORD_LOST = 2
RECORD_SAMPLE = 9

_HEAD_AT = 1024  # struct perf_event_mmap_page: data_head, data_tail, data_offset, data_size
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<IHH")  # struct perf_event_header: type, misc, size
_SAMPLE = struct.Struct("<QII")  # PERF_SAMPLE_IP, PERF_SAMPLE_TID (pid, tid)
_LOST = struct.Struct("<QQ")  # id, lost


@readonly
class Drained:
    """What one :meth:`SampleRing.drain` found: each sample's instruction pointer and
    thread id, in order, and how many samples the kernel could not store."""

    ips: list[int]
    tids: list[int]
    lost: int


class SampleRing:
    """The ring buffer of one sampling fd (``1 + data_pages`` pages mapped shared); the fd
    stays the caller's. ``data_pages`` must be a power of two (perf_event_open(2))."""

    def __init__(self, fd: int, data_pages: int) -> None:
        if data_pages < 1 or data_pages & (data_pages - 1):
            raise ValueError(f"data_pages must be a power of two, not {data_pages}")
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
        ips, tids, lost = _parse(data)
        _U64.pack_into(self._map, _HEAD_AT + 8, head)
        return Drained(ips, tids, lost)

    def close(self) -> None:
        """Unmap the buffer (the fd is closed by its owner)."""
        self._map.close()


def _parse(data: bytes) -> tuple[list[int], list[int], int]:
    """Sample and lost records of ``data``; others (none are asked for) are skipped. A
    record whose size does not fit ends the parse, and a sample is counted lost for it."""
    ips: list[int] = []
    tids: list[int] = []
    lost = 0
    at, n = 0, len(data)
    while at + _HEADER.size <= n:
        kind, _misc, size = _HEADER.unpack_from(data, at)
        if size < _HEADER.size or at + size > n:
            lost += 1
            break
        body = at + _HEADER.size
        if kind == RECORD_SAMPLE and size >= _HEADER.size + _SAMPLE.size:
            ip, _pid, tid = _SAMPLE.unpack_from(data, body)
            ips.append(ip)
            tids.append(tid)
        elif kind == RECORD_LOST and size >= _HEADER.size + _LOST.size:
            lost += _LOST.unpack_from(data, body)[1]
        at += size
    return ips, tids, lost


__all__ = ["RECORD_LOST", "RECORD_SAMPLE", "Drained", "SampleRing"]
