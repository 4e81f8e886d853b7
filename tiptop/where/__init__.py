"""``--where``: the hottest functions of one process, by sampling (``profile``), its
samples named through ``/proc/PID/maps``, ELF symbols (``elf``, pyelftools) and JIT map
files (``resolve``)."""

from __future__ import annotations

from tiptop.where.profile import (
    CPU_CLOCK,
    EVENT,
    RATE_HZ,
    Hot,
    Profile,
    SampledEvent,
    Stack,
    TaskProfiler,
    event_for,
)

__all__ = [
    "CPU_CLOCK",
    "EVENT",
    "RATE_HZ",
    "Hot",
    "Profile",
    "SampledEvent",
    "Stack",
    "TaskProfiler",
    "event_for",
]
