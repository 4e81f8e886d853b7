"""PMUs as the kernel describes them under ``<sysfs>/bus/event_source/devices/``.

``type`` holds the ``perf_event_attr.type`` of a PMU; ``format/<term>`` maps a term to bit
ranges of ``config``/``config1``/``config2``/``config3`` (``config:0-7,32-35``);
``events/<alias>`` holds ``term[=value],...`` with optional ``.scale``/``.unit`` companions
(Documentation/ABI/testing/sysfs-bus-event_source-devices-{format,events}).
"""

from __future__ import annotations

import os
import re

from tiptop.errors import EventError
from tiptop.kernel.explain import NO_PMU
from tiptop.readonly import by_value

_FORMAT_RE = re.compile(r"^(config[123]?):\s*([0-9,\-\s]+)$")
_FIELDS = ("config", "config1", "config2", "config3")


def devices_dir(sysfs_root: str) -> str:
    """The directory holding one subdirectory per PMU."""
    return os.path.join(sysfs_root, "bus", "event_source", "devices")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def list_pmus(sysfs_root: str) -> list[str]:
    """Names of the PMUs this kernel exposes (sorted)."""
    try:
        return sorted(os.listdir(devices_dir(sysfs_root)))
    except OSError:
        return []


def core_pmus(sysfs_root: str) -> list[str]:
    """The CPU PMUs: ``["cpu"]``, or ``cpu_core``/``cpu_atom``... on hybrid parts, or []."""
    pmus = list_pmus(sysfs_root)
    if "cpu" in pmus:
        return ["cpu"]
    return [p for p in pmus if p.startswith("cpu_")]


def alias_pmus(sysfs_root: str) -> list[str]:
    """The PMUs whose ``events/`` aliases count this CPU's own events: :func:`core_pmus`, or
    where there is none (Arm: ``armv8_pmuv3_0``, ``armv8_cortex_a72``..., one per kind of
    core) every PMU with a ``cpus`` file, as perf tells core PMUs apart
    (tools/perf/util/pmu.c, ``is_sysfs_pmu_core``; drivers/perf/arm_pmu.c writes ``cpus``)."""
    cores = core_pmus(sysfs_root)
    if cores:
        return cores
    base = devices_dir(sysfs_root)
    return [p for p in list_pmus(sysfs_root) if os.path.isfile(os.path.join(base, p, "cpus"))]


def per_cpu_only(sysfs_root: str, name: str) -> bool:
    """Whether PMU ``name`` counts per CPU only: it has a ``cpumask`` file, the CPUs its
    events are opened on (uncore, RAPL ``power``...; ``<pmu>/cpumask`` in
    Documentation/ABI/testing/sysfs-bus-event_source-devices-events, ``<event>.cpus``).
    The kernel refuses such a PMU's events on a task with EINVAL (kernel/events/core.c
    ``perf_event_alloc()``: "Disallow uncore-task events"). Only used to explain that
    EINVAL: nothing is refused on its word."""
    return os.path.isfile(os.path.join(devices_dir(sysfs_root), name, "cpumask"))


def is_hybrid(sysfs_root: str) -> bool:
    """True when there is no ``cpu`` PMU but several core PMUs (Intel hybrid)."""
    cores = core_pmus(sysfs_root)
    return bool(cores) and cores != ["cpu"]


@by_value
class Format:
    """Where one term's bits go: ``field`` (config..config3) and (low, high) ranges."""

    field: str
    ranges: tuple[tuple[int, int], ...]

    @property
    def width(self) -> int:
        """Number of bits the term holds."""
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def place(self, value: int) -> int:
        """Scatter ``value``'s bits over the ranges, lowest bits into the first range."""
        if value < 0 or value >> self.width:
            raise ValueError(f"value 0x{value:x} does not fit in {self.width} bits")
        word = 0
        for lo, hi in self.ranges:
            n = hi - lo + 1
            word |= (value & ((1 << n) - 1)) << lo
            value >>= n
        return word


def parse_format(text: str) -> Format:
    """``config1:1,6-10,44`` -> Format; ``ValueError`` on anything else."""
    m = _FORMAT_RE.match(text.strip())
    if not m:
        raise ValueError(f"bad format {text!r}")
    ranges = []
    for part in m.group(2).replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if not 0 <= a <= b < 64:
            raise ValueError(f"bad bit range {part!r} in {text!r}")
        ranges.append((a, b))
    return Format(m.group(1), tuple(ranges))


class Pmu:
    """One PMU directory, read lazily."""

    def __init__(self, sysfs_root: str, name: str) -> None:
        self.name = name
        self.path = os.path.join(devices_dir(sysfs_root), name)
        if not os.path.isdir(self.path):
            if (name == "cpu" or name.startswith("cpu_")) and not alias_pmus(sysfs_root):
                # A core PMU's name where sysfs shows none: the machine has no PMU at all.
                raise EventError(f"no PMU named {name!r}: {NO_PMU}")
            have = ", ".join(list_pmus(sysfs_root)) or "none"
            raise EventError(f"no PMU named {name!r} on this machine (have: {have})")
        self._formats: dict[str, Format] | None = None

    @property
    def type(self) -> int:
        """The dynamic ``perf_event_attr.type`` of this PMU."""
        text = _read(os.path.join(self.path, "type"))
        try:
            return int(text or "")
        except ValueError:
            raise EventError(f"PMU {self.name!r} has no readable type file") from None

    @property
    def formats(self) -> dict[str, Format]:
        """Term name -> Format, from ``format/``."""
        if self._formats is None:
            fmts: dict[str, Format] = {}
            fdir = os.path.join(self.path, "format")
            for term in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
                text = _read(os.path.join(fdir, term))
                try:
                    fmts[term] = parse_format(text or "")
                except ValueError as e:
                    raise EventError(f"PMU {self.name!r} format {term!r}: {e}") from None
            self._formats = fmts
        return self._formats

    def alias(self, name: str) -> tuple[str, float, str] | None:
        """The ``events/<name>`` terms, scale and unit; None when there is no such alias."""
        base = os.path.join(self.path, "events")
        if not name or "/" in name or name.startswith(".") or name.endswith((".scale", ".unit")):
            return None
        terms = _read(os.path.join(base, name))
        if terms is None:
            return None
        scale_text = _read(os.path.join(base, name + ".scale"))
        try:
            scale = float(scale_text) if scale_text else 1.0
        except ValueError:
            scale = 1.0
        return terms, scale, _read(os.path.join(base, name + ".unit")) or ""

    def aliases(self) -> list[str]:
        """Every alias name under ``events/``."""
        base = os.path.join(self.path, "events")
        names = os.listdir(base) if os.path.isdir(base) else []
        return sorted(n for n in names if not n.endswith((".scale", ".unit")))


def parse_terms(text: str) -> list[tuple[str, str | None]]:
    """``event=0x3c,inv,cmask=1`` -> [("event", "0x3c"), ("inv", None), ("cmask", "1")]."""
    out: list[tuple[str, str | None]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        out.append((key.strip(), value.strip() if eq else None))
    return out


def encode_terms(pmu: Pmu, terms: list[tuple[str, str | None]], event: str) -> dict[str, int]:
    """Config words from ``term=value`` pairs using the PMU's formats.

    A bare term means 1 ("If a <term> is specified alone ... 0x1 is assigned", sysfs ABI);
    ``config``..``config3`` may be given directly. Values are decimal or ``0x`` hex.
    """
    words = dict.fromkeys(_FIELDS, 0)
    for key, text in terms:
        if text == "?":
            raise EventError(f"{event}: term {key!r} needs a value ({key}=...)")
        try:
            value = 1 if text is None else int(text, 0)
        except ValueError:
            raise EventError(f"{event}: bad value {text!r} for term {key!r}") from None
        if key in _FIELDS:
            words[key] |= value
            continue
        fmt = pmu.formats.get(key)
        if fmt is None:
            known = ", ".join(sorted(pmu.formats)) or "none"
            raise EventError(f"{event}: PMU {pmu.name!r} has no term {key!r} (terms: {known})")
        try:
            words[fmt.field] |= fmt.place(value)
        except ValueError as e:
            raise EventError(f"{event}: term {key!r}: {e}") from None
    return words
