"""What the whole machine did, read from ``/proc``: the time the hypervisor stole from its
CPUs, the tasks runnable now, and the pressure stall information of CPU, I/O and memory.

Each read returns cumulative counts (ticks or microseconds since boot) or None when the
kernel does not have the file; the engine turns two reads into a refresh's fractions
(``tiptop.engine.scan.times``).
"""

from __future__ import annotations

import os

__all__ = ["PRESSURE_RESOURCES", "cpu_ticks", "delay_accounting", "pressure_totals", "runnable"]

#: The resources whose pressure the kernel reports (Documentation/accounting/psi.rst).
PRESSURE_RESOURCES = ("cpu", "io", "memory")


def _read(path: str, size: int = 4096) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def cpu_ticks(proc_root: str) -> tuple[int, int] | None:
    """All CPUs' ``steal`` ticks and their total ticks so far, from the ``cpu`` line of
    ``/proc/stat`` (proc(5): user nice system idle iowait irq softirq steal guest
    guest_nice; guest time is already in user and nice, so it is not added again)."""
    data = _read(f"{proc_root}/stat", 512)
    if data is None or not data.startswith(b"cpu "):
        return None
    try:
        ticks = [int(x) for x in data.split(b"\n", 1)[0].split()[1:9]]
    except ValueError:
        return None
    if len(ticks) < 8:
        return None
    return ticks[7], sum(ticks)


def pressure_totals(proc_root: str, resource: str) -> tuple[int | None, int | None] | None:
    """The ``total`` of the ``some`` and ``full`` lines of ``/proc/pressure/RESOURCE``: the
    microseconds so far in which some tasks, and all non-idle tasks at once, stalled on it
    (Documentation/accounting/psi.rst); None without PSI (``CONFIG_PSI``, ``psi=0``)."""
    data = _read(f"{proc_root}/pressure/{resource}")
    if data is None:
        return None
    found: dict[bytes, int] = {}
    for line in data.splitlines():
        kind, _, rest = line.partition(b" ")
        for field in rest.split():
            key, _, value = field.partition(b"=")
            if key == b"total" and value.isdigit():
                found[kind] = int(value)
    if not found:
        return None
    return found.get(b"some"), found.get(b"full")


def runnable(proc_root: str) -> int | None:
    """Tasks runnable now, this one left out: the fourth field of ``/proc/loadavg``,
    ``RUNNABLE/TOTAL`` (proc(5)), counts the reader itself, which runs while it reads."""
    data = _read(f"{proc_root}/loadavg", 256)
    try:
        return max(int(data.split()[3].split(b"/")[0]) - 1, 0) if data else None
    except (IndexError, ValueError):
        return None


def delay_accounting(proc_root: str) -> bool | None:
    """Whether the kernel counts tasks' delays now (``kernel.task_delayacct``,
    Documentation/accounting/delay-accounting.rst); None without the setting. A task forked
    while it was off is never counted (``delayacct_tsk_init``, include/linux/delayacct.h,
    gives it no record), even after it is turned on."""
    data = _read(f"{proc_root}/sys/kernel/task_delayacct", 16)
    return None if data is None else data.strip() == b"1"
