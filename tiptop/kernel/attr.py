"""``Attr``: a ``struct perf_event_attr`` as a frozen dataclass; pure Python.

Only the fields tiptop uses: counting, and sampling one task for ``--where``
(``sample_period``, ``sample_type``, ``freq``). ``tiptop.kernel._ffi`` turns it into
the C struct; everything else handles this record. Bit positions and field meanings follow
``include/uapi/linux/perf_event.h`` and perf_event_open(2).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# read_format bits (perf_event_open(2), "read_format").
FORMAT_TOTAL_TIME_ENABLED = 1 << 0
FORMAT_TOTAL_TIME_RUNNING = 1 << 1
FORMAT_ID = 1 << 2
FORMAT_GROUP = 1 << 3
# sample_type bits (perf_event_open(2), "sample_type"): a record's fields come in this order.
SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
#: What every group leader asks for: one read() gives nr, enabled, running, (value, id)*.
GROUP_READ_FORMAT = FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING | FORMAT_ID | FORMAT_GROUP


@dataclass(frozen=True)
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

    def replace(self, **changes: object) -> Attr:
        """A copy with some fields changed."""
        # ``changes`` are field names and values as dataclasses.replace() takes them; a
        # checker cannot match one ``**`` of mixed types to the fields one by one.
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
