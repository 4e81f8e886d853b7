"""Turn an event name (or a type/config pair) into bindings for this machine.

Tried in this order: ``pmu/terms/`` syntax, raw ``rNNNN``, perf's generic hardware, cache
and software names (the forms perf-list(1) describes) and the original's upper-case names,
bare aliases of the core PMU's ``events/`` (Documentation/ABI/testing/
sysfs-bus-event_source-devices-events), tracepoints ``subsystem:event`` through tracefs
(``tiptop.events.tracefs``), and finally vendor names through libpfm4
(pfm_get_os_event_encoding(3)). A ``NAME:UMASK`` spelling is both a tracepoint's and
libpfm4's: tracefs is asked first, then libpfm4, and when neither knows it the line is
tracefs' for a lower-case subsystem, libpfm4's otherwise. On hybrid CPUs a generic
hardware or cache event becomes one binding per core PMU, with the PMU's type in
``config[63:32]`` (uapi perf_event.h, ``PERF_PMU_TYPE_SHIFT``).
"""

from __future__ import annotations

import re

from tiptop import vocab
from tiptop.errors import EventError
from tiptop.events import sysfs, tracefs
from tiptop.events.bindings import EventBinding
from tiptop.kernel import pfm
from tiptop.kernel.attr import Attr
from tiptop.kernel.consts import PERF_PMU_TYPE_SHIFT
from tiptop.kernel.explain import NO_PMU
from tiptop.vocab import PerfType

_PMU_SYNTAX = re.compile(r"^([A-Za-z0-9_.\-]+)/(.*)/$")
_RAW = re.compile(r"^r([0-9a-fA-F]{1,16})$")
_VENDOR = re.compile(r"^([A-Za-z0-9_]+::)?[A-Za-z][A-Za-z0-9_]*([.:][A-Za-z0-9_=.:]+)*$")


def _generic(name: str, type_: int, config: int, sysfs_root: str) -> list[EventBinding]:
    """A HARDWARE or HW_CACHE event; one binding per core PMU when hybrid."""
    cores = sysfs.core_pmus(sysfs_root)
    if cores and cores != ["cpu"]:
        out = []
        for pmu_name in cores:
            ptype = sysfs.Pmu(sysfs_root, pmu_name).type
            attr = Attr(type=int(type_), config=config | (ptype << PERF_PMU_TYPE_SHIFT))
            out.append(EventBinding(f"{pmu_name}/{name}/", pmu_name, attr))
        return out
    attr = Attr(type=int(type_), config=int(config))
    return [EventBinding(name, cores[0] if cores else "cpu", attr)]


def _builtin(name: str, sysfs_root: str) -> list[EventBinding] | None:
    """Generic hardware, cache, software and predefined names; None if not one."""
    low = name.lower()
    if low in vocab.HARDWARE:
        return _generic(name, PerfType.HARDWARE, int(vocab.HARDWARE[low]), sysfs_root)
    if name in vocab.HARDWARE_UPPER:
        return _generic(name, PerfType.HARDWARE, vocab.HARDWARE_UPPER[name], sysfs_root)
    if low in vocab.SOFTWARE:
        attr = Attr(type=int(PerfType.SOFTWARE), config=int(vocab.SOFTWARE[low]))
        return [EventBinding(name, "software", attr)]
    cache = vocab.parse_cache_name(name)
    if cache is not None:
        return _generic(name, PerfType.HW_CACHE, cache, sysfs_root)
    return None


def _from_terms(
    pmu: sysfs.Pmu, name: str, terms: list[tuple[str, str | None]], sysfs_root: str
) -> list[EventBinding]:
    """``pmu/terms/``: aliases expand in place, then every term is encoded."""
    expanded: list[tuple[str, str | None]] = []
    scale, unit = 1.0, ""
    for key, value in terms:
        if key == "name" and value:
            name = value
            continue
        if value is None and key not in pmu.formats and key not in ("config", "config1"):
            alias = pmu.alias(key)
            if alias is not None:
                expanded += sysfs.parse_terms(alias[0])
                scale, unit = alias[1], alias[2]
                continue
            low = key.lower()
            if len(terms) == 1 and (low in vocab.HARDWARE or vocab.parse_cache_name(key)):
                # cpu_core/cycles/: the generic event on that core PMU only.
                type_ = PerfType.HARDWARE if low in vocab.HARDWARE else PerfType.HW_CACHE
                config = vocab.HARDWARE.get(low) or vocab.parse_cache_name(key) or 0
                if sysfs.is_hybrid(sysfs_root):
                    config |= pmu.type << PERF_PMU_TYPE_SHIFT
                attr = Attr(type=int(type_), config=int(config))
                return [EventBinding(name, pmu.name, attr)]
        expanded.append((key, value))
    words = sysfs.encode_terms(pmu, expanded, name)
    attr = Attr(
        type=pmu.type,
        config=words["config"],
        config1=words["config1"],
        config2=words["config2"],
        config3=words["config3"],
    )
    return [EventBinding(name, pmu.name, attr, scale, unit)]


def _core_alias(name: str, sysfs_root: str) -> list[EventBinding] | None:
    """A bare alias (``slots``, ``topdown-retiring``, Arm's ``stall_frontend``) from the core
    PMU(s)' events/."""
    out = []
    for pmu_name in sysfs.alias_pmus(sysfs_root):
        pmu = sysfs.Pmu(sysfs_root, pmu_name)
        if pmu.alias(name) is not None:
            out += _from_terms(pmu, f"{pmu_name}/{name}/", [(name, None)], sysfs_root)
    return out or None


def _tracepoint(name: str, subsystem: str, event: str, sysfs_root: str) -> list[EventBinding]:
    """``subsystem:event`` from tracefs, else libpfm4's ``EVENT:UMASK`` (see the module doc)."""
    try:
        config = tracefs.tracepoint_id(subsystem, event, sysfs_root)
    except EventError as not_traced:
        try:
            attr = pfm.encode(name)
        except EventError as not_vendor:
            raise (not_vendor if subsystem.isupper() else not_traced) from None
        return [EventBinding(name, "cpu", attr)]
    attr = Attr(type=int(PerfType.TRACEPOINT), config=config)
    return [EventBinding(name, "tracepoint", attr)]


def resolve(name: str, *, sysfs_root: str = "/sys") -> list[EventBinding]:
    """Every binding ``name`` stands for on this machine; ``EventError`` if none.

    One binding except for generic events on hybrid CPUs (one per core PMU).
    """
    name = name.strip()
    if not name:
        raise EventError("empty event name")
    m = _PMU_SYNTAX.match(name)
    if m:
        pmu = sysfs.Pmu(sysfs_root, m.group(1))
        terms = sysfs.parse_terms(m.group(2))
        if not terms:
            raise EventError(f"{name}: no terms between the slashes")
        return _from_terms(pmu, name, terms, sysfs_root)
    m = _RAW.match(name)
    if m:
        attr = Attr(type=int(PerfType.RAW), config=int(m.group(1), 16))
        return [EventBinding(name, "cpu", attr)]
    found = _builtin(name, sysfs_root) or _core_alias(name, sysfs_root)
    if found:
        return found
    _not_implemented(name, sysfs_root)
    m = tracefs.NAME.match(name)
    if m:
        return _tracepoint(name, m.group(1), m.group(2), sysfs_root)
    if _VENDOR.match(name) and ("." in name or ":" in name or name.isupper()):
        attr = pfm.encode(name)  # EventError when libpfm4 is missing or does not know it
        return [EventBinding(name, "cpu", attr)]
    raise EventError(
        f"unknown event {name!r}: use a perf name (cycles, instructions, "
        "L1-dcache-load-misses, task-clock, ...), rNNNN, pmu/term=value,.../, a tracepoint "
        "subsystem:event (sched:sched_switch) or a vendor name such as FP_ASSIST.ANY "
        "(needs libpfm4)"
    )


#: An Arm PMUv3 common event's alias: lower case, as drivers/perf/arm_pmuv3.c names them.
_ARM_ALIAS = re.compile(r"^[a-z][a-z0-9_]*$")
#: A core PMU's alias as sysfs spells them (``slots``, ``topdown-retiring``, ``l1d_cache``).
_ALIAS = re.compile(r"^[a-z][a-z0-9_\-]*$")


def _not_implemented(name: str, sysfs_root: str) -> None:
    """A lower-case name that no core PMU's ``events/`` lists raises the reason where there is
    one: on Arm (CPU PMUs other than ``cpu``) drivers/perf/arm_pmuv3.c lists only the common
    events that the PMCEID0/1 registers say this CPU implements
    (``armv8pmu_event_attr_is_visible``); where sysfs shows no CPU PMU at all (no hardware
    PMU: a VM without a virtual one), no alias such as Intel's ``slots`` can exist."""
    if not _ALIAS.match(name) or sysfs.core_pmus(sysfs_root):
        return
    pmus = sysfs.alias_pmus(sysfs_root)
    if not pmus:
        raise EventError(
            f"unknown event {name!r}: not a perf name, and no CPU PMU here whose events/ "
            f"could define it: {NO_PMU}"
        )
    if _ARM_ALIAS.match(name):
        raise EventError(
            f"{name}: not an event of PMU {', '.join(pmus)} (its events/ lists only the "
            "common events this CPU implements, as its PMCEID registers announce)"
        )


def resolve_numeric(type: int, config: int, *, sysfs_root: str = "/sys") -> list[EventBinding]:
    """Bindings for the original's ``type``/``config`` pair (hybrid-expanded when generic)."""
    if type == PerfType.HARDWARE and config >> PERF_PMU_TYPE_SHIFT == 0:
        label = vocab.event_name(type, config) or f"hardware/0x{config:x}/"
        return _generic(label, PerfType.HARDWARE, config, sysfs_root)
    if type == PerfType.HW_CACHE and config >> PERF_PMU_TYPE_SHIFT == 0:
        label = vocab.event_name(type, config) or f"hw_cache/0x{config:x}/"
        return _generic(label, PerfType.HW_CACHE, config, sysfs_root)
    if type == PerfType.SOFTWARE:
        label = vocab.event_name(type, config) or f"software/0x{config:x}/"
        return [EventBinding(label, "software", Attr(type=int(type), config=int(config)))]
    if type == PerfType.RAW:
        return [EventBinding(f"r{config:x}", "cpu", Attr(type=int(type), config=int(config)))]
    pmu_name = next(
        (p for p in sysfs.list_pmus(sysfs_root) if _pmu_type(sysfs_root, p) == type), None
    )
    label = f"{pmu_name}/config=0x{config:x}/" if pmu_name else f"type{type}/0x{config:x}/"
    return [EventBinding(label, pmu_name or "", Attr(type=type, config=config))]


def _pmu_type(sysfs_root: str, name: str) -> int | None:
    try:
        return sysfs.Pmu(sysfs_root, name).type
    except EventError:
        return None
