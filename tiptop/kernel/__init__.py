"""The kernel-facing counter layer: ``perf_event_open`` groups read with one ``read()``.

Public surface: :class:`Attr`, the backend protocol (:class:`Backend`, :class:`Group`,
:class:`GroupReading`), the real backend (:class:`PerfBackend`, :class:`CounterGroup`,
:func:`open_group`, :func:`parse_group_read`), the raw syscall (:func:`perf_event_open`),
the error explanations, and :func:`keep_heap` (malloc kept from mmap for numpy's arrays).
"""

from __future__ import annotations

from tiptop.kernel._ffi import keep_heap, perf_event_open
from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
from tiptop.kernel.backend import Backend, Group, GroupReading
from tiptop.kernel.explain import (
    explain_open_error,
)
from tiptop.kernel.group import (
    CounterGroup,
    PerfBackend,
    open_group,
    parse_group_read,
)

__all__ = [
    "GROUP_READ_FORMAT",
    "Attr",
    "Backend",
    "CounterGroup",
    "Group",
    "GroupReading",
    "PerfBackend",
    "explain_open_error",
    "keep_heap",
    "open_group",
    "parse_group_read",
    "perf_event_open",
]
