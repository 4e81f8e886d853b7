"""``Attr``: a ``struct perf_event_attr`` as a read-only record compared by value
(``tiptop.readonly.by_value``); pure Python.

Only the fields tiptop uses: counting, and sampling one task for ``--where``
(``sample_period``, ``sample_type``, ``freq``, its call chains, its context switches).
``tiptop.kernel._ffi`` turns it into the C struct; everything else handles this record. Bit
positions and field meanings follow ``include/uapi/linux/perf_event.h`` and
perf_event_open(2).
"""

from __future__ import annotations

import dataclasses

from tiptop.readonly import by_value

# read_format bits (perf_event_open(2), "read_format").
FORMAT_TOTAL_TIME_ENABLED = 1 << 0
FORMAT_TOTAL_TIME_RUNNING = 1 << 1
FORMAT_ID = 1 << 2
FORMAT_GROUP = 1 << 3
# sample_type bits (perf_event_open(2), "sample_type"): a record's fields come in this order.
SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
SAMPLE_TIME = 1 << 2
SAMPLE_CALLCHAIN = 1 << 5
#: What every group leader asks for: one read() gives nr, enabled, running, (value, id)*.
GROUP_READ_FORMAT = FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING | FORMAT_ID | FORMAT_GROUP


@by_value
class Attr:
    """The parts of ``perf_event_attr`` tiptop sets. ``replace`` gives a modified copy."""

    type: int
    config: int
    config1: int = 0
    config2: int = 0
    config3: int = 0
    read_format: int = GROUP_READ_FORMAT
    disabled: bool = False
    inherit: bool = False
    inherit_thread: bool = False
    pinned: bool = False
    exclude_user: bool = False
    exclude_kernel: bool = True
    exclude_hv: bool = True
    exclude_idle: bool = False
    enable_on_exec: bool = False
    #: The sampling period, or with ``freq`` the rate in Hz (one union in the C struct).
    sample_period: int = 0
    #: ``PERF_SAMPLE_*`` bits: the fields each sample record carries.
    sample_type: int = 0
    freq: bool = False
    #: Call chains (``PERF_SAMPLE_CALLCHAIN``) without their kernel or user part.
    exclude_callchain_kernel: bool = False
    exclude_callchain_user: bool = False
    #: The most frames of a call chain (0: the kernel's ``perf_event_max_stack``).
    sample_max_stack: int = 0
    #: Every record, not only samples, ends with the sample's TID and TIME fields.
    sample_id_all: bool = False
    #: ``PERF_RECORD_SWITCH`` records when the task is switched in and out.
    context_switch: bool = False
    #: Sample times on ``clockid`` (``CLOCK_MONOTONIC``: comparable with ``time.monotonic``).
    use_clockid: bool = False
    clockid: int = 0

    def replace(self, **changes: object) -> Attr:
        """A copy with some fields changed."""
        # ``changes`` are field names and values as dataclasses.replace() takes them; a
        # checker cannot match one ``**`` of mixed types to the fields one by one.
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
