"""Intel perf metrics: the ``slots`` event and the ``topdown-*`` metric events of a PMU.

From Ice Lake on, a big core has fixed counter 3 (``slots``: pipeline slots) and the
``PERF_METRICS`` MSR, whose 8-bit fields split those slots into top-down level 1 (and, from
Sapphire Rapids and the hybrid P-cores, level 2) fractions. The kernel exposes them as
pseudo-events: ``slots`` is ``event=0x00,umask=0x4``, the metrics ``event=0x00,umask=0x80``
(retiring) to ``umask=0x87`` (memory bound), under ``events/`` of the PMU
(arch/x86/events/intel/core.c, ``EVENT_ATTR_STR(slots, ...)`` and ``td_*``). Its rules
(tools/perf/Documentation/topdown.txt, "Limits on Intel Ice Lake"; ``intel_pmu_hw_config``):
every metric event must be in a group whose leader is ``slots`` (EINVAL otherwise), and is
read with ``PERF_FORMAT_GROUP``; metric events take no counter of their own
(``collect_event`` in arch/x86/events/core.c allows ``n_metric`` events beyond the PMU's
counters), so a group of ``slots`` and every metric always fits.

What a reader sees: each read updates the whole group at once (``intel_pmu_read_topdown_event``
does the update once per group read) and resets fixed counter 3 and ``PERF_METRICS`` in the
hardware, but each event's count accumulates: a metric's count grows by
``slots * field / 0xff`` of every read interval (``icl_get_metrics_event_value``). So counts
read are cumulative and never decrease, and ``delta(metric) / delta(slots)`` is the metric's
fraction over the interval, with the 8-bit precision of each short interval (topdown.txt,
"Resetting metrics counters").

Which PMU has perf metrics is read from sysfs, not from the CPU model: a PMU has them when its
``events/slots`` exists. On hybrid CPUs only ``cpu_core`` has it; ``cpu_atom`` lists
``topdown-retiring`` etc. too, but as ordinary events counting its own issue slots
(``event=0xc2,umask=0x0`` ..., the first strings of ``EVENT_ATTR_STR_HYBRID(topdown-*)``):
not metrics, and not in the same unit.
"""

from __future__ import annotations

import os
from enum import Enum

from tiptop.errors import EventError
from tiptop.events import sysfs
from tiptop.events.bindings import EventBinding
from tiptop.readonly import readonly

#: ``INTEL_ARCH_EVENT_MASK`` (arch/x86/include/asm/perf_event.h): event select and unit
#: mask, the bits the kernel compares (``is_metric_event``, ``is_slots_event``).
ARCH_EVENT_MASK = 0xFFFF
#: The sysfs alias of the slots event.
SLOTS = "slots"
#: The prefix of the metric events' sysfs aliases.
PREFIX = "topdown-"


class Role(Enum):
    """What a perf-metrics event is to the kernel (``is_slots_event``,
    ``is_metric_event`` in arch/x86/events/intel/core.c)."""

    #: The ``slots`` event: the group's leader, the one the metrics are read beside.
    SLOTS = "slots"
    #: A ``topdown-*`` metric event.
    METRIC = "metric"


@readonly
class PerfMetrics:
    """One PMU's perf metrics: its ``type``, the ``slots`` encoding and each metric's
    encoding (event select and unit mask) with its alias name."""

    pmu: str
    type: int
    slots: int
    metrics: dict[int, str]
    #: The PMU's ``cpus`` file (hybrid PMUs: which CPUs it counts on), or "".
    cpus: str = ""

    def role(self, b: EventBinding) -> Role | None:
        """The binding's :class:`Role`, or None (by encoding, as the kernel)."""
        if b.pmu != self.pmu or b.attr.type != self.type:
            return None
        code = b.attr.config & ARCH_EVENT_MASK
        if code == self.slots:
            return Role.SLOTS
        return Role.METRIC if code in self.metrics else None


def _code(pmu: sysfs.Pmu, name: str) -> int | None:
    """The event select and unit mask of ``pmu``'s alias ``name``; None if it has none."""
    alias = pmu.alias(name)
    if alias is None:
        return None
    try:
        words = sysfs.encode_terms(pmu, sysfs.parse_terms(alias[0]), name)
    except EventError:
        return None
    return words["config"] & ARCH_EVENT_MASK


def perf_metrics(sysfs_root: str, pmu_name: str) -> PerfMetrics | None:
    """``pmu_name``'s perf metrics, or None when it has no ``events/slots`` (no
    ``PERF_METRICS``: CPUs before Ice Lake, ``cpu_atom``, other vendors) or no such PMU.

    A ``topdown-*`` alias is a metric when its event select is 0 and its unit mask at
    least 0x80, as the kernel's ``INTEL_TD_METRIC_*`` pseudo-encodings
    (arch/x86/include/asm/perf_event.h); other ``topdown-*`` aliases (Skylake's
    ``topdown-total-slots``...) are ordinary events."""
    try:
        pmu = sysfs.Pmu(sysfs_root, pmu_name)
        ptype = pmu.type
    except EventError:
        return None
    slots = _code(pmu, SLOTS)
    if slots is None:
        return None
    metrics: dict[int, str] = {}
    for name in pmu.aliases():
        if name.startswith(PREFIX):
            code = _code(pmu, name)
            if code is not None and code & 0xFF == 0 and code >> 8 >= 0x80:
                metrics[code] = name
    return PerfMetrics(pmu_name, ptype, slots, metrics, _cpus(sysfs_root, pmu_name))


def _cpus(sysfs_root: str, pmu_name: str) -> str:
    """The PMU's ``cpus`` file (``0-15``), or "" (Documentation/ABI/testing/
    sysfs-bus-event_source-devices: hybrid core PMUs have one)."""
    try:
        with open(os.path.join(sysfs.devices_dir(sysfs_root), pmu_name, "cpus")) as f:
            return f.read().strip()
    except OSError:
        return ""


class Topdown:
    """The perf metrics of this machine's PMUs, read from sysfs once each, and what the
    counter plan needs of them (``tiptop.engine.count.plan``, "Top-down groups")."""

    def __init__(self, sysfs_root: str) -> None:
        self.sysfs_root = sysfs_root
        self._pmus: dict[str, PerfMetrics | None] = {}

    def pmu(self, name: str) -> PerfMetrics | None:
        """``name``'s perf metrics, or None."""
        if name not in self._pmus:
            self._pmus[name] = perf_metrics(self.sysfs_root, name) if name else None
        return self._pmus[name]

    def role(self, b: EventBinding) -> Role | None:
        """The binding's :class:`Role` (slots, a top-down metric event) or None."""
        pm = self.pmu(b.pmu)
        return pm.role(b) if pm else None

    def metrics_only(self, bindings: list[EventBinding]) -> list[EventBinding]:
        """The metric bindings of a name when it has some, else all its bindings: on hybrid
        CPUs ``topdown-retiring`` also names a ``cpu_atom`` event counting in its own
        slots, which would make a metric's sum meaningless."""
        metric = [b for b in bindings if self.role(b) is Role.METRIC]
        return metric or bindings

    def head(self, members: list[tuple[int, EventBinding]]) -> int:
        """Reorder one PMU's group members in place so that ``slots`` leads and every
        metric event follows it, the other members after them in their order; returns
        the length of that head, 0 (and no change) without a metric event or ``slots``."""
        roles = [self.role(b) for _, b in members]
        if Role.METRIC not in roles or Role.SLOTS not in roles:
            return 0
        lead = roles.index(Role.SLOTS)
        first = [members[lead]] + [
            m for m, r in zip(members, roles, strict=True) if r is Role.METRIC
        ]
        rest = [m for k, m in enumerate(members) if k != lead and roles[k] is not Role.METRIC]
        members[:] = first + rest
        return len(first)

    def only_here(self, pmu: str, dropped: list[str]) -> str | None:
        """On a hybrid CPU, the line saying that ``pmu``'s top-down group counts only on its
        CPUs (``dropped``: the other PMUs' events of the same names left out); None when
        every core PMU has perf metrics."""
        pm = self.pmu(pmu)
        others = [p for p in sysfs.core_pmus(self.sysfs_root) if p != pmu and not self.pmu(p)]
        if pm is None or not others:
            return None
        where = ", ".join(
            f"{p} (CPUs {c})" if (c := _cpus(self.sysfs_root, p)) else p for p in others
        )
        left = (
            f"; its events of the same names ({', '.join(dict.fromkeys(dropped))}) count "
            "its own issue slots and are left out"
            if dropped
            else ""
        )
        own = f" (CPUs {pm.cpus})" if pm.cpus else ""
        return (
            f"top-down metrics count only on {pmu}{own}: {where} has no perf metrics{left}; "
            f"a task's time there is not counted: its fractions are of its {pmu} slots, its "
            f"running fraction is its share of time on {pmu}, and a task that ran only on "
            f"{', '.join(others)} shows '?'"
        )
