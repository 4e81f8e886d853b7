"""Binding a screen's counters to this machine: resolve, probe on ourselves, form groups.

Every counter of a screen is resolved to its event bindings (``tiptop.events``), each
binding is opened once on ourselves with the attrs the sampler will use (the *probe*); a
binding that fails there is reported once, with its errno explained, and never opened per
task. The bindings that open are grouped per PMU, because the kernel refuses a group that
mixes hardware PMUs (kernel/events/core.c, ``perf_event_open()``: "Don't allow group of
multiple hw events from different pmus", EINVAL).

*Groups too large for the PMU are split, as perf does.* A hardware PMU has a few counters
(AMD Zen: 6, Intel cores: 4-8 per thread); a group must fit them all at once, or its open
fails with EINVAL (x86 ``validate_group()``; ENOSPC on some other PMUs). When a PMU's group
fails its probe while each event alone opened, its events are packed greedily into several
groups, each checked by opening it on ourselves: events are taken in order of first use by
the screen's columns, a column's events are kept together in one group whenever they fit
in one, and a new group starts when the current one would stop opening; the events are then
spread evenly over that many groups when they can be. The kernel then
time-multiplexes the groups (perf_event_open(2), "time_enabled ... time_running"); each
group has its own enabled/running times, so every event is scaled by its own group's
``enabled / running``. A ratio whose operands land in different groups is therefore the
ratio of two separately scaled estimates (what ``perf stat`` prints for events that do not
share a group): exact for uniform workloads, approximate for phased ones.

*Top-down groups (Intel perf metrics, ``tiptop.events.topdown``).* A ``topdown-*`` metric
event opens only in a group led by its PMU's ``slots``, read with ``PERF_FORMAT_GROUP``
(tools/perf/Documentation/topdown.txt, "Limits on Intel Ice Lake"; EINVAL otherwise). So it
is probed in a group ``[slots, metric]``, never alone; without a working ``slots`` of its PMU
in the screen it is not opened and one line says why; and the PMU's group starts with
``slots``, then every metric, then the other events. Metric events use no counter
(arch/x86/events/core.c ``collect_event``), so this head always fits: when the PMU's events
must be split, the head stays whole in the first group. Counts read are cumulative (the
kernel resets the hardware on each read but adds each read's share to the count,
arch/x86/events/intel/core.c ``intel_update_topdown_event``): ``delta(metric) /
delta(slots)`` is the interval's fraction. On hybrid CPUs only ``cpu_core`` has perf
metrics; ``cpu_atom``'s events of the same names count its own slots, so an alias bound to
a metric keeps only its metric bindings, and one line says that time on the other core
PMU's CPUs is not counted (a task's running fraction is its share of time on ``cpu_core``).

*Attrs.* Counting only (no sampling), ``PERF_FORMAT_GROUP`` reads, user space only unless
``-K`` is allowed, ``inherit`` (+ ``inherit_thread``, Linux 5.13+) in process mode. PMUs that
reject every ``exclude_*`` bit (``msr``: the kernel sets ``PERF_PMU_CAP_NO_EXCLUDE`` for
it, arch/x86/events/msr.c) get none: their counts (TSC, APERF...) are not per-mode anyway.

*Kernel-only software events.* ``context-switches`` and ``cpu-migrations``
(``PERF_TYPE_SOFTWARE``, ``PERF_COUNT_SW_CONTEXT_SWITCHES`` = 3 and
``PERF_COUNT_SW_CPU_MIGRATIONS`` = 4, include/uapi/linux/perf_event.h) are raised by the
scheduler, in kernel context (``perf_sw_event_sched()`` in ``__schedule`` and
``set_task_cpu``), so with ``exclude_kernel=1`` they never count: ``perf_exclude_event()``
(kernel/events/core.c) drops an event raised with kernel registers. A silent 0 would be a
lie, so these two are counted in kernel mode (``exclude_kernel=0``) whenever kernel counting
is allowed (privileged, or ``perf_event_paranoid`` < 2: ``kernel_counting_allowed``), even
without ``-K``; -K changes nothing for them. When it is not allowed they are not opened at
all: one line says why (naming the paranoid level and what would allow it) and their cells
are ``?``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import field

import numpy as np

from tiptop.engine.count.packing import pack
from tiptop.engine.count.readout import CounterPlan, GroupDef
from tiptop.errors import CounterError, EventError, EventRefused
from tiptop.events import EventBinding, resolve, resolve_numeric, sysfs
from tiptop.events.bindings import counting_attr
from tiptop.events.topdown import Role, Topdown
from tiptop.host import Host
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Backend
from tiptop.kernel.explain import (
    NO_PMU,
    NO_PMU_COLUMNS,
    NO_PMU_KEY,
    explain_open_error,
    kernel_only,
    no_pmu_line,
)
from tiptop.messages import MessageLog
from tiptop.readonly import mutable
from tiptop.screens.columns import screen_columns
from tiptop.screens.evaluate import Evaluator
from tiptop.screens.model import NamedEvent, ScreenSpec


@mutable
class ScreenPlan:
    """A screen bound to this machine: the counter plan and the compiled columns."""

    plan: CounterPlan
    #: The screen's columns, compiled, over the counters in ``plan.aliases`` order.
    evaluator: Evaluator
    #: Kernel-mode counting is on (``-K`` asked and allowed).
    kernel: bool
    #: ``inherit_thread`` is used (the kernel knows it).
    inherit_thread: bool
    #: PMU -> (its events, the groups they were split into), for the PMUs whose events
    #: do not fit its counters together.
    split: dict[str, tuple[int, int]] = field(default_factory=dict)


class Planner:
    """Plans screens for one sampler (see the module doc); problems go to ``log``."""

    def __init__(
        self,
        backend: Backend,
        host: Host,
        log: MessageLog,
        *,
        threads: bool,
        kernel: bool,
        inherit_thread: bool = True,
    ) -> None:
        self.backend = backend
        self.host = host
        self.threads = threads
        self.sysfs_root = host.sysfs_root
        self.log = log
        self.inherit_thread = inherit_thread
        self.kernel = False
        #: Kernel-mode counting may be asked for (used by kernel-only events without -K).
        self.kernel_allowed = host.kernel_counting_allowed
        if kernel:
            if self.kernel_allowed:
                self.kernel = True
            else:
                log.say(
                    "kernel-refused",
                    f"kernel counting (-K) is not allowed: perf_event_paranoid is "
                    f"{host.paranoid} and we are neither root nor CAP_PERFMON; "
                    "counting user space only",
                )
        self._cores = sysfs.alias_pmus(host.sysfs_root)
        self.td = Topdown(host.sysfs_root)

    # ------------------------------------------------------------------ attrs
    def attr(self, b: EventBinding) -> Attr:
        """The attr one binding is opened with, per task and when probed."""
        in_kernel = self.kernel or (self.kernel_allowed and kernel_only(b.attr))
        return counting_attr(
            b, kernel=in_kernel, inherit=not self.threads, inherit_thread=self.inherit_thread
        )

    def explain(
        self, e: OSError, what: str, pmu: str | None = None, *, kernel: bool | None = None
    ) -> str:
        """One line for a failed open (``explain_open_error`` with this machine's facts);
        ``kernel`` says whether kernel mode was asked for (default: ``-K`` in effect)."""
        return explain_open_error(
            e,
            what,
            paranoid=self.host.paranoid,
            privileged=self.host.privileged,
            in_container=self.host.in_container,
            fd_limits=(self.host.fd_soft, self.host.fd_hard),
            kernel=self.kernel if kernel is None else kernel,
            event_pmu=pmu,
            core_pmus=self._cores,
            per_cpu_pmu=bool(pmu) and sysfs.per_cpu_only(self.sysfs_root, pmu or ""),
        )

    def say_kernel_only(self, names: Sequence[str], aliases: Sequence[str]) -> None:
        """Say once, in one line, that ``names`` are not counted: they happen only in the
        kernel and kernel counting is not allowed here (see the module doc)."""
        what = ", ".join(dict.fromkeys(names))
        level = "unreadable" if self.host.paranoid is None else str(self.host.paranoid)
        self.log.say(
            f"kernel-only:{what}",
            f"{what}: happen only in the kernel and would always read 0 without kernel "
            f"counting, which perf_event_paranoid {level} forbids to non-root users: run as "
            "root or with CAP_PERFMON, or set kernel.perf_event_paranoid to 1 or lower, to "
            "count them; their cells show '?'",
            subject=tuple(dict.fromkeys(aliases)),
        )

    # ------------------------------------------------------------------ probes
    def _opens(self, attrs: Sequence[Attr]) -> bool:
        """Whether a group of ``attrs`` opens on ourselves and is scheduled (closed again at
        once). The open checks the group against an empty PMU (x86 ``validate_group()``), so
        a group as large as the PMU opens even while a counter is held elsewhere, e.g. by
        the NMI watchdog (Documentation/admin-guide/sysctl/kernel.rst, "nmi_watchdog"):
        such a group is never scheduled (``time_running`` stays 0, perf_event_open(2)). An
        enabled group is scheduled at once on a running task, so one read tells."""
        try:
            group = self.backend.open_group(0, attrs)
        except CounterError:
            return False
        try:
            if len(attrs) > 1 and not attrs[0].disabled and not attrs[0].enable_on_exec:
                sum(range(1000))  # a few microseconds on the CPU with the group in
                r = group.read()
                if r.time_enabled > 0 and r.time_running == 0:
                    return False
        except (CounterError, OSError):
            return False
        finally:
            group.close()
        return True

    def probe(self, b: EventBinding, alias: str = "", leader: EventBinding | None = None) -> bool:
        """Open the event once on ourselves, after ``leader`` in one group when given (a
        metric event under its ``slots``); report a failure once (about ``alias``)."""
        head = [self.attr(leader)] if leader is not None else []
        try:
            self.backend.open_group(0, [*head, self.attr(b)]).close()
            return True
        except CounterError as e:
            if (
                leader is None
                and isinstance(e, EventRefused)
                and self.attr(b).inherit_thread
                and self._opens([self.attr(b).replace(inherit_thread=False)])
            ):
                self.inherit_thread = False
                self.log.say(
                    "no-inherit-thread",
                    "this kernel has no inherit_thread (Linux < 5.13): a process row "
                    "also counts the children it forks",
                    notice=True,
                )
                return True
            why = self.explain(e, b.name, b.pmu, kernel=not self.attr(b).exclude_kernel)
            if why.endswith(NO_PMU):  # one short line per run, not one per event
                line = no_pmu_line(NO_PMU_COLUMNS)
                self.log.say(NO_PMU_KEY, line, subject=alias, detail=NO_PMU, notice=True)
            else:
                self.log.say(f"probe:{b.pmu}:{b.name}:{e.errno}", why, subject=alias)
            return False

    def _opens_bindings(
        self, attrs: dict[EventBinding, Attr], bindings: list[EventBinding]
    ) -> bool:
        """:meth:`_opens` for ``bindings``, with their ``attrs``."""
        return self._opens([attrs[b] for b in bindings])

    # ------------------------------------------------------------------ screens
    def plan(self, screen: ScreenSpec) -> ScreenPlan:
        """Resolve and probe ``screen``'s counters here; build the plan and columns. A
        built-in whose generic variant stands in for this CPU says so once, and so does one
        whose counts are not a task's own while SMT is on (deviations.py, kind ``smt``)."""
        note = screen.variant.note() if screen.variant is not None else None
        if note:
            self.log.say(f"variant:{screen.name}", note, notice=True)
        caveat = None
        if self.host.smt_active:
            from tiptop.screens.deviations import smt_caveat  # its table: only with SMT on

            caveat = smt_caveat(screen.variant)
        if caveat:  # what this machine is: a notice, not an error
            self.log.say(f"smt:{screen.name}", f"screen {screen.name!r}: {caveat}", notice=True)
        aliases = tuple(c.alias for c in screen.counters)
        idx = {a: j for j, a in enumerate(aliases)}
        columns = screen_columns(screen)
        for col in columns:
            if col.error is not None:
                self.log.say(
                    f"column:{screen.name}:{col.header}",
                    f"column {col.header.strip()!r} of screen {screen.name!r}: {col.error}",
                )
        # First use by the columns, in screen order (aliases of one column by name).
        column_of: dict[int, int] = {}
        for c, col in enumerate(columns):
            for a in sorted(col.aliases):
                if a in idx:
                    column_of.setdefault(idx[a], c)
        order = sorted(range(len(aliases)), key=lambda j: (column_of.get(j, len(columns)), j))

        by_pmu, n_bind = self._bind(screen, order)
        groups, split = self._groups(by_pmu, column_of)
        plan = CounterPlan(aliases, groups, n_bind > 0, n_bind > 1)
        evaluator = Evaluator(screen, aliases)
        return ScreenPlan(plan, evaluator, self.kernel, self.inherit_thread, split)

    # ------------------------------------------------------------------ binding
    def say_no_slots(self, screen: ScreenSpec, alias: str, b: EventBinding) -> None:
        """One line: a metric event with no working ``slots`` of its PMU is not opened."""
        self.log.say(
            f"topdown-no-slots:{screen.name}:{alias}",
            f"counter {alias!r} ({b.name}) of screen {screen.name!r} is a top-down metric "
            f"event: the kernel opens it only in a group led by the 'slots' event of PMU "
            f"{b.pmu} (tools/perf/Documentation/topdown.txt), and this screen has no "
            "working 'slots' counter there: add one (e.g. 'S: slots'); not counted",
            subject=alias,
        )

    def _bind(
        self, screen: ScreenSpec, order: list[int]
    ) -> tuple[dict[str, list[tuple[int, EventBinding]]], np.ndarray]:
        """Resolve and probe the counters in ``order``: the working bindings per PMU (in
        that order, metric events after the rest) and the number per alias."""
        by_pmu: dict[str, list[tuple[int, EventBinding]]] = {}
        n_bind = np.zeros(len(screen.counters), np.int64)
        unseen: list[tuple[str, str]] = []  # kernel-only events that cannot count here
        metrics: list[tuple[int, EventBinding]] = []  # probed under their PMU's slots
        dropped: dict[str, list[str]] = {}  # PMU of a metric -> other PMUs' bindings left out
        for j in order:
            c = screen.counters[j]
            try:
                if isinstance(c.event, NamedEvent):
                    bindings = resolve(c.event.name, sysfs_root=self.sysfs_root)
                else:
                    bindings = resolve_numeric(
                        c.event.type, c.event.config, sysfs_root=self.sysfs_root
                    )
            except EventError as e:
                if str(e).endswith(NO_PMU):  # one short notice a run, as probe() says it
                    line = no_pmu_line(NO_PMU_COLUMNS)
                    self.log.say(NO_PMU_KEY, line, subject=c.alias, detail=NO_PMU, notice=True)
                    continue
                # The event's name, which the error says, not the screen's alias for it
                # (a built-in's aliases are no name a user knows).
                self.log.say(
                    f"counter:{screen.name}:{c.alias}",
                    f"screen {screen.name!r}: {e}",
                    subject=c.alias,
                )
                continue
            kept = self.td.metrics_only(bindings)
            for b in kept:
                if self.td.role(b) is Role.METRIC:
                    metrics.append((j, b))
                    left = [x.name for x in bindings if x not in kept]
                    dropped.setdefault(b.pmu, []).extend(left)
                elif kernel_only(b.attr) and not self.kernel_allowed:
                    unseen.append((b.name, c.alias))
                elif self.probe(b, c.alias):
                    by_pmu.setdefault(b.pmu, []).append((j, b))
                    n_bind[j] += 1
        if unseen:
            self.say_kernel_only([n for n, _ in unseen], [a for _, a in unseen])
        for j, b in metrics:
            alias = screen.counters[j].alias
            lead = next(
                (x for _, x in by_pmu.get(b.pmu, []) if self.td.role(x) is Role.SLOTS), None
            )
            if lead is None:
                self.say_no_slots(screen, alias, b)
            elif self.probe(b, alias, leader=lead):
                by_pmu[b.pmu].append((j, b))
                n_bind[j] += 1
        for pmu, members in by_pmu.items():
            if any(self.td.role(b) is Role.METRIC for _, b in members):
                aliases = [screen.counters[j].alias for j, b in members if self.td.role(b)]
                note = self.td.only_here(pmu, dropped.get(pmu, []))
                if note:
                    self.log.say(f"topdown-pmu:{pmu}", note, subject=tuple(aliases), notice=True)
        return by_pmu, n_bind

    def _groups(
        self, by_pmu: dict[str, list[tuple[int, EventBinding]]], column_of: dict[int, int]
    ) -> tuple[list[GroupDef], dict[str, tuple[int, int]]]:
        """Each PMU's members packed into groups that open (top-down head first), and per
        PMU split, its (events, groups): said with the running fraction (engine.sampler)."""
        groups: list[GroupDef] = []
        split: dict[str, tuple[int, int]] = {}
        for pmu, members in by_pmu.items():
            # One Attr per binding, the same objects in the groups tried here and in those
            # opened on every task: the open memo (kernel.group.OpenedAttrs) then matches a
            # task's group to its key by identity (a tuple compares items by ``is`` first),
            # not field by field.
            attrs = {b: self.attr(b) for _, b in members}
            opens = functools.partial(self._opens_bindings, attrs)
            packed = pack(members, column_of, opens, self.td.head(members))
            if len(packed) > 1:  # said with the running fraction (engine.sampler)
                split[pmu] = (len(members), len(packed))
            for ms in packed:
                groups.append(
                    GroupDef(
                        pmu,
                        tuple(attrs[b] for _, b in ms),
                        np.array([j for j, _ in ms], np.int64),
                    )
                )
        return groups, split
