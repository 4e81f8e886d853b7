"""``--check``, ``--list-events`` and the per-screen availability shown by
``--list-screens``: what this machine lets tiptop count, and why not.

Every probe opens the event on tiptop itself (``pid=0, cpu=-1``) with the attr the sampler
uses, counting user mode only, which is what ``perf_event_paranoid <= 2`` allows any user
(perf_event_open(2), "the perf_event_paranoid file"), or kernel mode too for kernel-only
events where that is allowed; a failure is reported with its real errno.

psutil (the machine's CPUs, memory and processes) is imported by the ``--check`` steps that
ask it: a run that falls back to the ``state`` screen imports this module for its probe.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from tiptop import vocab
from tiptop.errors import EventError
from tiptop.host import Host

if TYPE_CHECKING:
    from tiptop.events.bindings import EventBinding
    from tiptop.events.topdown import Topdown
    from tiptop.kernel.attr import Attr
    from tiptop.screens.model import NamedEvent, NumericEvent, ScreenSpec, VariantChoice


class Loaded(Protocol):
    """The screens loaded, as ``tiptop.cli.screens.ScreenSet`` holds them."""

    @property
    def screens(self) -> Sequence[ScreenSpec]:
        """The screens offered, in order."""
        ...

    @property
    def variants(self) -> Mapping[str, VariantChoice]:
        """Per built-in screen name, which variant this CPU got and why."""
        ...


#: Generic hardware events and software events, by perf's canonical names (``dummy``
#: counts nothing, ``bpf-output`` is not a count); then a few cache events (checked against
#: :func:`tiptop.vocab.parse_cache_name` by the tests).
GENERIC = tuple(vocab.HARDWARE_NAME.values())
SOFTWARE = tuple(n for n in vocab.SOFTWARE_NAME.values() if n in vocab.SOFTWARE and n != "dummy")
CACHE = (
    "L1-dcache-loads",
    "L1-dcache-load-misses",
    "L1-icache-load-misses",
    "LLC-loads",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
    "branch-loads",
    "branch-load-misses",
)


def _bindings(event: str | NamedEvent | NumericEvent, sysfs_root: str) -> list[EventBinding]:
    """An event record (NamedEvent/NumericEvent) or a name, resolved on this machine."""
    from tiptop import events
    from tiptop.screens.model import NamedEvent

    if isinstance(event, str):
        return events.resolve(event, sysfs_root=sysfs_root)
    if isinstance(event, NamedEvent):
        return events.resolve(event.name, sysfs_root=sysfs_root)
    return events.resolve_numeric(event.type, event.config, sysfs_root=sysfs_root)


def probe(event: str | NamedEvent | NumericEvent, host: Host) -> str | None:
    """``None`` when ``event`` opens on this process, else a short reason with the errno.

    The attr is the sampler's (``tiptop.events.bindings.counting_attr``): user mode, kernel
    mode too for kernel-only events where allowed, no exclude bit on the PMUs that refuse
    them (``msr``)."""
    from tiptop.events import sysfs
    from tiptop.events.bindings import counting_attr
    from tiptop.kernel import PerfBackend
    from tiptop.kernel.explain import NO_PMU, NO_PMU_SHORT, kernel_only, no_pmu

    try:
        bindings = _bindings(event, host.sysfs_root)
    except EventError as exc:
        # Said short here: the lists say the whole sentence once (:func:`no_pmu_note`).
        return NO_PMU_SHORT if NO_PMU in str(exc) else str(exc)
    cores = sysfs.alias_pmus(host.sysfs_root)
    last = "no binding"
    backend = PerfBackend()
    for b in bindings:
        if kernel_only(b.attr) and not host.kernel_counting_allowed:
            # Counted in user mode it would always read 0 (explain.kernel_only).
            last = (
                f"kernel-only event: needs root, CAP_PERFMON or "
                f"perf_event_paranoid < 2 (it is {host.paranoid})"
            )
            continue
        attr = counting_attr(b, kernel=kernel_only(b.attr), inherit=False, inherit_thread=False)
        try:
            group = backend.open_group(0, [*_slots_head(b, host, attr), attr])
        except OSError as exc:
            code = exc.errno or 0
            last = f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"
            if no_pmu(code, b.pmu, cores):
                last = f"{errno.errorcode[code]}: {NO_PMU_SHORT}"
            if code == errno.EINVAL and sysfs.per_cpu_only(host.sysfs_root, b.pmu):
                last += f": PMU {b.pmu} counts per CPU only (sysfs cpumask), not per task"
            continue
        group.close()
        return None
    return last


def _slots_head(b: EventBinding, host: Host, attr: Attr) -> list[Attr]:
    """An Intel perf-metrics event (``topdown-*``) opens only in a group led by its PMU's
    ``slots`` (tools/perf/Documentation/topdown.txt; ``tiptop.events.topdown``): that
    leader's attr, else nothing."""
    from tiptop.events.topdown import ARCH_EVENT_MASK, Role

    pm = _topdown(host.sysfs_root).pmu(b.pmu)
    if pm is None or pm.role(b) is not Role.METRIC:
        return []
    return [attr.replace(config=(attr.config & ~ARCH_EVENT_MASK) | pm.slots)]


@functools.lru_cache(maxsize=4)
def _topdown(sysfs_root: str) -> Topdown:
    """The perf metrics of this machine's PMUs, read from sysfs once for all the probes of
    ``--list-screens`` / ``--list-events`` (``tiptop.events.topdown.Topdown``)."""
    from tiptop.events.topdown import Topdown

    return Topdown(sysfs_root)


def screen_counters(screen: ScreenSpec, host: Host) -> tuple[int, int, str]:
    """``(usable, total, first reason)`` over the screen's counters."""
    ok, reason = 0, ""
    for c in screen.counters:
        why = probe(c.event, host)
        if why is None:
            ok += 1
        elif not reason:
            reason = f"{c.alias}: {why}"
    return ok, len(screen.counters), reason


def counter_need(screen: ScreenSpec) -> str | None:
    """How many hardware counters a screen's events take, said for ``--check``: Intel's
    ``slots`` and its ``topdown-*`` metrics apart (fixed counter 3 and PERF_METRICS, no
    general-purpose counter: tools/perf/Documentation/topdown.txt); None without any."""
    names = [
        c.event.name.split("/")[-2] if c.event.name.endswith("/") else c.event.name
        for c in screen.counters
        if hasattr(c.event, "name") and c.event.name not in SOFTWARE
    ]
    metrics = sum(n == "slots" or n.startswith("topdown-") for n in names)
    others = len(names) - metrics
    if not names:
        return None
    if not metrics:
        return f"needs {others} hardware counters (on fewer: multiplexed, cells marked)"
    return (
        f"needs slots and {metrics - 1} top-down metrics (no general counter) and "
        f"{others} general-purpose counters (on fewer: multiplexed, cells marked)"
    )


def no_pmu_note(reasons: list[str]) -> list[str]:
    """The whole no-PMU sentence (``tiptop.kernel.explain.NO_PMU``) as one line, where
    one of ``reasons`` (:func:`probe`'s) was its short form; else nothing."""
    from tiptop.kernel.explain import NO_PMU, NO_PMU_SHORT

    return [NO_PMU] if any(r.endswith(NO_PMU_SHORT) for r in reasons) else []


def screen_status(screen: ScreenSpec, host: Host) -> str:
    """One phrase for ``--list-screens``: runs here, partly, or not, and why."""
    ok, total, reason = screen_counters(screen, host)
    if ok == total:
        return "runs here"
    if ok == 0:
        return f"cannot count here: {reason}"
    return f"{ok} of {total} counters here; {reason}"


def list_events(host: Host) -> str:
    """Generic, software and cache events, then each sysfs PMU's aliases, with status."""
    lines: list[str] = []

    reasons: list[str] = []

    def section(title: str, names: list[str] | tuple[str, ...]) -> None:
        lines.append(f"{title}:")
        for name in names:
            why = probe(name, host)
            reasons.append(why or "")
            lines.append(f"  {name:40s} {'available' if why is None else why}")

    section("Generic hardware events", GENERIC)
    section("Software events", SOFTWARE)
    section("Cache events", CACHE)
    try:
        from tiptop.events import sysfs

        for pmu_name in sysfs.list_pmus(host.sysfs_root):
            pmu = sysfs.Pmu(host.sysfs_root, pmu_name)
            try:
                aliases = pmu.aliases()
            except OSError:
                aliases = []
            if aliases:
                section(f"PMU {pmu_name} (sysfs aliases)", [f"{pmu_name}/{a}/" for a in aliases])
    except ImportError:
        lines.append("(sysfs PMU listing unavailable in this build)")
    lines += tracepoint_lines(host)
    lines += no_pmu_note(reasons)
    return "\n".join(lines) + "\n"


def tracepoint_lines(host: Host) -> list[str]:
    """How to name tracepoints, tracefs' subsystems (names only: there are thousands of
    events) or why there are none, and whether ``sched:sched_switch`` counts here."""
    import textwrap

    from tiptop.events import tracefs

    events, names, why = tracefs.subsystems(host.sysfs_root)
    where = events or "<tracefs>/events"
    out = [f"Tracepoints (name them subsystem:event; the events are {where}/<subsystem>/*):"]
    if names:
        text = f"{len(names)} subsystems: {', '.join(names)}"
        out += textwrap.wrap(text, 88, initial_indent="  ", subsequent_indent="    ")
    else:
        return [*out, f"  none listed: {why}"]
    if "sched" in names:
        status = probe("sched:sched_switch", host)
        out.append(f"  {'sched:sched_switch':40s} {'available' if status is None else status}")
    return out


def screen_lines(loaded: Loaded, host: Host) -> list[str]:
    """Each screen and whether it counts here; for a built-in with CPU variants, which one
    this CPU got and why; then the built-ins no variant of which is for this CPU."""
    lines = ["screens:"]
    for i, s in enumerate(loaded.screens):
        lines.append(f"  {i:2d} {s.name}: {screen_status(s, host)}")
        v = s.variant
        picked = v.picked if v is not None else None  # a screen offered has its variant
        if v is None or picked is None:
            continue
        if len(v.variants) > 1 or v.variants[picked][1:] != (None, None):
            lines.append(f"       variant {picked + 1} of {len(v.variants)}: {v.desc} ({v.why()})")
            if need := counter_need(s):
                lines.append(f"       {need}")
    shown = {s.name for s in loaded.screens}
    absent = [v for name, v in loaded.variants.items() if v.picked is None and name not in shown]
    if absent:
        names = ", ".join(v.name for v in absent)
        lines.append(f"  not offered: {names} (no variant for {absent[0].cpu()})")
    return lines


def _machine() -> str:
    """CPUs (logical, and physical cores where psutil can tell) and memory, from psutil."""
    import psutil

    logical = psutil.cpu_count(logical=True) or "?"
    physical = psutil.cpu_count(logical=False) or "?"
    try:
        memory = f"{psutil.virtual_memory().total / 2**30:.1f} GiB"
    except (OSError, RuntimeError):
        memory = "?"
    return f"CPUs: {logical} logical, {physical} physical cores; memory: {memory}"


def _open_fds() -> int | str:
    """How many files tiptop itself has open (they count against the limit too)."""
    import psutil

    try:
        return psutil.Process().num_fds()
    except psutil.Error:
        return "?"


def check(host: Host, loaded: Loaded | None = None) -> str:
    """A readable report: kernel, CPUs and memory, paranoid level, PMUs, capabilities, fd
    limits, which screens work, and what to change to get more."""
    paranoid = host.paranoid
    privileged = host.privileged
    soft, hard = host.fd_soft, host.fd_hard
    lines = [
        f"kernel: {platform.system()} {platform.release()} ({platform.machine()})",
        _machine(),
        f"perf_event_paranoid: {paranoid if paranoid is not None else 'missing'}",
        f"user: uid {host.uid}, euid {host.euid}; privileged (root or CAP_PERFMON/"
        f"CAP_SYS_ADMIN): {'yes' if privileged else 'no'}",
        f"open files limit: soft {soft}, hard {hard} (one fd per event per thread; "
        f"{_open_fds()} open now)",
    ]
    try:
        from tiptop.events import sysfs

        pmus = sysfs.list_pmus(host.sysfs_root)
        lines.append(f"PMUs in sysfs: {', '.join(pmus) if pmus else 'none'}")
    except (ImportError, OSError):
        pass
    hw = probe("cycles", host)
    sw = probe("task-clock", host)
    lines.append(f"hardware counters (cycles): {'yes' if hw is None else 'no: ' + hw}")
    lines.append(f"software counters (task-clock): {'yes' if sw is None else 'no: ' + sw}")
    time_line, time_advice = time_accounting(host)
    lines.append(time_line)
    if loaded is not None:
        lines += screen_lines(loaded, host)
    advice = []
    if paranoid is None:
        advice.append("this kernel has no perf events (CONFIG_PERF_EVENTS off)")
    elif not privileged and paranoid >= 2:
        advice.append(
            "only your own tasks, user mode only: run as root (or with CAP_PERFMON) to "
            "watch every task; sysctl kernel.perf_event_paranoid=1 allows -K and counting "
            "context switches and migrations of your own tasks"
        )
    if hw is not None:
        advice += no_pmu_note([hw]) or [f"hardware counters: {hw}"]
    advice += time_advice
    budget, more = _fd_budget(host)
    lines.append(budget)
    advice += more
    lines.append("to get more: " + ("; ".join(advice) if advice else "nothing to change"))
    return "\n".join(lines) + "\n"


def time_accounting(host: Host) -> tuple[str, list[str]]:
    """Where the tasks' time goes (the ``state`` screen, docs/screens.md "Where the time
    goes"): which of its sources this kernel has, in one line, and the advice to turn on
    what is off."""
    schedstat = os.path.exists(os.path.join(host.proc_root, "self", "schedstat"))
    psi = os.path.exists(os.path.join(host.proc_root, "pressure", "cpu"))
    io = {True: "on", False: "off", None: "not in this kernel"}[host.delayacct]
    where = host.cpu_cgroups
    limits = (
        "no cpu controller mounted"
        if where is None
        else (f"cgroup {'v2' if where.v2 else 'v1'} cpu controller at {where.mount}")
    )
    line = (
        "where the time goes (screen state): on a CPU and waiting (schedstat) "
        f"{'yes' if schedstat else 'no'}; blocked on I/O (delay accounting) {io}; CPU limits "
        f"and throttling: {limits}; pressure (PSI) {'yes' if psi else 'no'}"
    )
    advice = []
    if host.delayacct is False:
        advice.append(
            "sysctl kernel.task_delayacct=1 lets %IO count the time tasks wait for block "
            "I/O, for the tasks started after it (the boot option delayacct counts all); it "
            "times each delay with two clock reads and keeps a record per task, the cost "
            "for which the kernel leaves it off (Documentation/accounting/delay-accounting.rst)"
        )
    return line, advice


def _fd_budget(host: Host) -> tuple[str, list[str]]:
    """The fd budget line, and the advice it calls for (none when every task fits)."""
    import psutil

    advice: list[str] = []
    soft, hard = host.fd_soft, host.fd_hard
    # A counted task holds one fd per event and a pidfd, given up when fds run short
    # (engine.count.exits).
    events = 4
    per_task = events + 1
    fits, bare, tasks = host.fd_budget // per_task, host.fd_budget // events, len(psutil.pids())
    line = (
        f"fds for counters: {host.fd_budget}, room for {fits} tasks of {events} events and a "
        f"pidfd each, {bare} without the pidfds ({tasks} processes now)"
    )
    if bare < tasks:
        advice.append(
            f"the fd limit is what limits counting here: {tasks} processes need about "
            f"{per_task * tasks} fds; raise it (ulimit -n {max(hard, 8 * tasks)}) to count "
            "them all"
        )
    elif fits < tasks:
        advice.append(
            f"every process fits only without its pidfd (each then costs a stat(2) a "
            f"refresh); ulimit -n {max(hard, 8 * tasks)} gives them their pidfds"
        )
    elif soft < 4096 and soft < hard:
        advice.append(f"raise the fd limit (ulimit -n {hard}) to watch more tasks")
    return line, advice
