"""Known-answer workloads counted through tiptop's engine, fitted over sizes.

The workloads are the self-test's machine-code kernels (tiptop/selftest/code.py), run in its
child process and counted by pid exactly as ``tiptop --selftest`` counts them
(``tiptop.selftest.measure``: the screen planned by ``engine.count.plan.Planner``, groups opened on
the child while it sleeps before the kernel's body, read with ``engine.count.readout.read_units``
once it sleeps after it). Each kernel runs at several sizes; a figure is always a
least-squares **slope** per iteration (``tiptop.selftest.checks.fit``), so the fixed cost of
starting and stopping lands in the intercept. Slot fractions are the screen's own column
expressions evaluated on the per-iteration slopes of their counters. docs/selftest.md,
"Known-answer validation", says what is asserted.

``perf stat`` is given tiptop's plan spelled as its ``-e`` groups (:func:`perf_events`: a
generic event by perf's own name, anything else as ``pmu/config=...,config1=...,config2=.../``,
each with the modifier its attr's exclude bits mean) and its ``-x,`` output is read back
(:func:`parse_csv`). Nothing here starts a process: tests/system/known_runs.py starts the
kernel child (alone or under perf stat) that :meth:`Engine.series` counts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tiptop.cells import STATUS_DTYPE
from tiptop.engine.count.plan import Planner, ScreenPlan
from tiptop.engine.count.readout import GroupDef
from tiptop.host import Host
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Backend
from tiptop.messages import MessageLog
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec, delta_key
from tiptop.selftest.checks import fit
from tiptop.selftest.measure import KernelChild, measure
from tiptop.vocab import PerfType, event_name

#: Level-1 top-down column headers (``topdown`` screens: % of slots); %SMT only on some.
LEVEL1 = ("%RET", "%BADS", "%FE", "%BE", "%SMT")
#: The four every level-1 screen must have.
LEVEL1_REQUIRED = LEVEL1[:4]


def host_screen(name: str) -> ScreenSpec:
    """The built-in screen ``name`` as this host picks it (the first variant whose
    arch/model gate admits this CPU, ``tiptop.screens.loader.builtin_screens``)."""
    from tiptop.cli.screens import host_target
    from tiptop.screens.loader import builtin_screens

    return next(s for s in builtin_screens(host_target()) if s.name == name)


def level1_columns(screen: ScreenSpec) -> dict[str, int]:
    """Header (stripped) -> column index of the screen's level-1 fraction columns."""
    return {c.header.strip(): i for i, c in enumerate(screen.columns) if c.header.strip() in LEVEL1}


def core_cpu(sysfs_root: str = "/sys") -> int | None:
    """A CPU to pin the kernel child on: the last one we may run on that belongs to the core
    PMU (``cpu_core/cpus`` on a hybrid CPU, so the counts are a big core's), or None."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        with open(f"{sysfs_root}/bus/event_source/devices/cpu_core/cpus") as f:
            cores = _cpu_list(f.read())
        allowed = [c for c in allowed if c in cores] or allowed
    except OSError:
        pass
    return allowed[-1] if allowed else None


def _cpu_list(text: str) -> set[int]:
    """``0-3,8`` -> {0, 1, 2, 3, 8} (the kernel's cpulist format)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def l1d_bytes(cpu: int, sysfs_root: str = "/sys") -> int | None:
    """The level-1 data cache size of ``cpu`` (``/sys/devices/system/cpu/cpuN/cache/indexM``,
    Documentation/ABI/testing/sysfs-devices-system-cpu), or None when sysfs does not say."""
    base = f"{sysfs_root}/devices/system/cpu/cpu{cpu}/cache"
    try:
        indexes = sorted(os.listdir(base))
    except OSError:
        return None
    for ix in indexes:
        try:
            with open(f"{base}/{ix}/level") as f:
                level = f.read().strip()
            with open(f"{base}/{ix}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{ix}/size") as f:
                size = f.read().strip()
        except OSError:
            continue
        if level == "1" and kind == "Data":
            mult = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
            return int(size.rstrip("KM")) * mult
    return None


@dataclass
class Series:
    """One kernel counted at several sizes: per size and alias, the scaled count and the
    running fraction (``time_running / time_enabled``: below 1 when multiplexed)."""

    kernel: str
    sizes: list[int]
    aliases: tuple[str, ...]
    counts: np.ndarray  # (sizes, aliases)
    running: np.ndarray  # (sizes, aliases)

    def slope(self, alias: str) -> float:
        """Least-squares count per iteration of ``alias``."""
        j = self.aliases.index(alias)
        return float(fit(self.sizes, [float(c) for c in self.counts[:, j]]).slope)

    def slopes(self) -> dict[str, float]:
        """Every alias's slope."""
        return {a: self.slope(a) for a in self.aliases}

    def describe(self) -> str:
        """The raw figures, for an assertion message."""
        rows = [f"{self.kernel} sizes={self.sizes}"]
        for j, a in enumerate(self.aliases):
            rows.append(
                f"  {a}: counts={[int(c) for c in self.counts[:, j]]} slope={self.slope(a):.4f} "
                f"running={[round(float(r), 3) for r in self.running[:, j]]}"
            )
        return "\n".join(rows)


class Engine:
    """A screen planned as ``--selftest`` plans it (user space only, process mode), ready to
    count kernels run by a :class:`KernelChild`."""

    def __init__(self, screen: ScreenSpec, backend: Backend | None = None) -> None:
        if backend is None:
            from tiptop.kernel import PerfBackend

            backend = PerfBackend()
        self.screen = screen
        self.backend = backend
        self.log = MessageLog()
        self.planner = Planner(backend, Host.read(), self.log, threads=False, kernel=False)
        self.splan: ScreenPlan = self.planner.plan(screen)

    def missing(self) -> dict[str, str]:
        """Aliases that did not open here, each with the reason tiptop gives (errno
        explained, as ``--check`` and the live view say it)."""
        opened = {int(j) for g in self.splan.plan.groups for j in g.alias_index}
        out = {}
        for j, alias in enumerate(self.splan.plan.aliases):
            if j not in opened:
                msg = self.log.about(alias)
                out[alias] = msg.line if msg else "not opened"
        return out

    def series(
        self, child: KernelChild, kernel: str, sizes: list[int], ring: int | None = None
    ) -> Series:
        """``kernel`` at each of ``sizes`` (a chase over ``ring`` bytes). Raises
        ``AssertionError`` naming the alias when a group failed to open or read."""
        aliases = self.splan.plan.aliases
        counts = np.zeros((len(sizes), len(aliases)))
        running = np.zeros((len(sizes), len(aliases)))
        for i, n in enumerate(sizes):
            run = measure(child, kernel, n, self.splan, self.planner, self.backend, ring)
            assert not run.failed, f"{kernel} n={n}: {run.failed}"
            counts[i] = run.counts
            assert run.enabled is not None
            with np.errstate(divide="ignore", invalid="ignore"):
                running[i] = np.where(run.enabled > 0, run.running / run.enabled, 1.0)
        return Series(kernel, list(sizes), aliases, counts, running)


def fractions(screen: ScreenSpec, slopes: dict[str, float]) -> dict[str, float]:
    """The screen's level-1 columns (header -> value, in % of slots) evaluated on per-iteration
    slopes: ``delta(X)`` reads X's slope, so the fixed cost of each run is left out. A column
    whose operands did not count is nan."""
    env = {delta_key(a): (np.array([v]), np.zeros(1, STATUS_DTYPE)) for a, v in slopes.items()}
    columns = screen_columns(screen)
    out = {}
    for header, i in level1_columns(screen).items():
        col = columns[i].compiled
        out[header] = float(col.evaluate(env, 1)[0][0]) if col is not None else float("nan")
    return out


# ------------------------------------------------- perf stat's spelling of tiptop's plan


def modifier(attr: Attr) -> str:
    """perf's event modifier for ``attr``'s exclude bits (perf-list(1), "EVENT MODIFIERS":
    ``u`` user, ``k`` kernel, ``h`` hypervisor); "" when nothing is excluded."""
    if not (attr.exclude_user or attr.exclude_kernel or attr.exclude_hv):
        return ""
    return "".join(
        m
        for m, excluded in (
            ("u", attr.exclude_user),
            ("k", attr.exclude_kernel),
            ("h", attr.exclude_hv),
        )
        if not excluded
    )


def spell(attr: Attr, pmu: str) -> str:
    """One event for ``perf stat -e``: a generic hardware, software or cache event by perf's
    name (``cpu_core/instructions/`` when its config names a hybrid PMU in bits 63:32,
    perf_event_open(2) "PERF_TYPE_HARDWARE"), anything else by its PMU and raw configs."""
    mod = modifier(attr)
    generic = (PerfType.HARDWARE, PerfType.SOFTWARE, PerfType.HW_CACHE)
    if attr.type in generic:
        name = event_name(attr.type, attr.config & 0xFFFFFFFF)
        if name is not None:
            if attr.config >> 32:
                return f"{pmu}/{name}/{mod}"
            return f"{name}:{mod}" if mod else name
    terms = [f"config={attr.config:#x}"]
    terms += [f"config{k}={v:#x}" for k, v in ((1, attr.config1), (2, attr.config2)) if v]
    return f"{pmu}/{','.join(terms)}/{mod}"


def perf_events(groups: Sequence[GroupDef]) -> tuple[str, list[int]]:
    """The ``-e`` argument for a plan's groups (each a ``{...}`` group, in the plan's order)
    and, per event in that order, its alias index."""
    parts, order = [], []
    for g in groups:
        parts.append("{" + ",".join(spell(a, g.pmu) for a in g.attrs) + "}")
        order += [int(j) for j in g.alias_index]
    return ",".join(parts), order


#: perf stat's units for clock events, in the nanoseconds tiptop counts them in.
_UNIT_NS = {"msec": 1e6, "usec": 1e3, "nsec": 1.0}


def parse_csv(text: str) -> list[float | str]:
    """``perf stat -x,`` output (perf-stat(1), "CSV FORMAT": value, unit, event, ...): per
    event line, in order, its value (a clock in ns, as tiptop has it), or the text perf gave
    instead (``<not counted>``, ``<not supported>``)."""
    out: list[float | str] = []
    for line in text.splitlines():
        fields = line.split(",")
        if line.startswith("#") or len(fields) < 3:
            continue
        try:
            out.append(float(fields[0]) * _UNIT_NS.get(fields[1], 1.0))
        except ValueError:
            out.append(fields[0])
    return out
