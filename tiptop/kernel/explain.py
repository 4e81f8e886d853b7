"""Turn a failed ``perf_event_open`` into one line saying what it means and what to do.

Meanings follow the ERRORS section of perf_event_open(2) and the kernel's
``perf_allow_kernel()`` (``sysctl_perf_event_paranoid > 1 && !perfmon_capable()`` ->
EACCES); the wording borrows from perf's ``evsel__open_strerror``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence

from tiptop.kernel.attr import Attr
from tiptop.vocab import PerfType, SwId

#: The head of :data:`NO_PMU`: the short form a list of screens or events gives per item,
#: the whole sentence said once below it.
NO_PMU_SHORT = "no hardware PMU here"

#: The one sentence for a machine without a hardware PMU (what, why, what to do). Start-up,
#: ``--check``, ``--list-screens``, the live view and ``--selftest`` all say it
#: (tests/system/test_no_pmu_line.py compares them; docs/selftest.md quotes it).
NO_PMU = (
    f"{NO_PMU_SHORT}: the kernel shows no CPU performance counters (a VM or container "
    "without PMU passthrough?), so cycles, instructions and cache events cannot be "
    "counted, software events can (the state and sched screens); enable the VM's virtual PMU "
    "(QEMU/KVM: -cpu host) or run on bare metal"
)

#: The message-log key of the no-PMU news: said once per run, whichever counter or
#: screen met it first (``tiptop.messages.MessageLog``).
NO_PMU_KEY = "no-pmu"


def no_pmu_line(doing: str) -> str:
    """The no-PMU news in one short line (with ``tiptop: `` before it, at most 100
    characters for a ``doing`` of up to 26): what is missing, what tiptop does instead
    (``doing``), and where the whole of :data:`NO_PMU` is said (``--check``; the live
    ``e`` window)."""
    return f"{NO_PMU_SHORT} (VM without virtual PMU?): {doing}; see tiptop --check"


#: What a screen with hardware columns does without a PMU (:func:`no_pmu_line`).
NO_PMU_COLUMNS = "hardware columns show ?"

_PARANOID_MEANING = {
    -1: "no restrictions",
    0: "no raw tracepoint access",
    1: "no CPU-wide events",
    2: "user-space counting only",
}


#: Software events raised only in kernel context: with ``exclude_kernel=1`` they always read
#: 0 (the scheduler raises them with its own registers, ``perf_sw_event_sched()``, and
#: ``perf_exclude_event()`` in kernel/events/core.c drops what comes from kernel mode), so
#: they are worth opening only when kernel counting is allowed.
KERNEL_ONLY_SW = frozenset({int(SwId.CONTEXT_SWITCHES), int(SwId.CPU_MIGRATIONS)})


def kernel_only(attr: Attr) -> bool:
    """Whether ``attr`` fires only in kernel context, so that it always reads 0 with
    ``exclude_kernel=1``: context switches, CPU migrations, and tracepoints
    (``perf_tp_event_match()`` in kernel/events/core.c: "If exclude_kernel, only trace
    user-space tracepoints (uprobes)"; a uprobe event is taken as kernel-only too)."""
    if attr.type == PerfType.TRACEPOINT:
        return True
    return attr.type == PerfType.SOFTWARE and attr.config in KERNEL_ONLY_SW


def _paranoid_text(paranoid: int | None) -> str:
    if paranoid is None:
        return "perf_event_paranoid is unreadable"
    meaning = _PARANOID_MEANING.get(paranoid, "perf_event_open disabled for unprivileged users")
    if paranoid > 2:
        meaning = "perf_event_open disabled for unprivileged users (Debian/Ubuntu patch)"
    return f"perf_event_paranoid is {paranoid} ({meaning})"


def no_pmu(code: int, event_pmu: str | None, core_pmus: Sequence[str] | None) -> bool:
    """Whether errno ``code`` for an event of ``event_pmu`` means :data:`NO_PMU`.

    The kernel answers ENOENT when no PMU claims the attr's ``type`` (perf_init_event()
    tries them all), and when a PMU knows the type but not the config (a generic event
    the CPU lacks). Only for a CPU event where sysfs shows no core PMU (``core_pmus``
    empty, not unknown) is "no hardware PMU" the cause.
    """
    return (
        code == errno.ENOENT
        and core_pmus is not None
        and not core_pmus
        and event_pmu in (None, "cpu")
    )


def _enoent_why(event_pmu: str | None, core_pmus: Sequence[str] | None) -> str:
    """What ENOENT means, given the event's PMU and the core PMUs sysfs shows
    (:func:`no_pmu`)."""
    if no_pmu(errno.ENOENT, event_pmu, core_pmus):
        return NO_PMU
    if core_pmus is None:  # nothing known about this machine: the two usual causes
        return (
            "the event is not supported by this CPU/kernel, or there is no hardware PMU "
            "here (tiptop --check says which); software events still work"
        )
    if event_pmu == "":
        return (
            "no PMU of this machine has that event type (the types are in "
            "/sys/bus/event_source/devices/*/type); check the counter's type"
        )
    if event_pmu is None or event_pmu == "cpu" or event_pmu in core_pmus:
        return (
            f"the CPU's PMU ({', '.join(core_pmus)}) does not support this event on this "
            "CPU model/kernel; see tiptop --list-events"
        )
    return f"the {event_pmu} PMU does not support this event (type/config) on this kernel"


def _einval(head: str, per_cpu_pmu: str | None) -> str:
    """EINVAL: a PMU that counts per CPU only (``per_cpu_pmu``), else the usual causes."""
    if per_cpu_pmu is not None:
        return (
            f"{head}: the {per_cpu_pmu} PMU counts per CPU only (its sysfs cpumask), and the "
            "kernel refuses its events on a task (perf_event_open(2) with pid > 0 and "
            "cpu == -1); tiptop counts per task, so it cannot count this event"
        )
    return (
        f"{head}: invalid event: a bad encoding (config out of range or reserved bits), "
        "an unsupported flag, or a group too large to fit the counters; check the event "
        "or use fewer counters per screen"
    )


def explain_open_error(
    err: OSError,
    event: str,
    *,
    paranoid: int | None,
    privileged: bool,
    kernel: bool,
    event_pmu: str | None = None,
    core_pmus: Sequence[str] | None = None,
    in_container: bool = False,
    fd_limits: tuple[int, int] | None = None,
    per_cpu_pmu: bool = False,
) -> str:
    """One line: ``event: ERRNAME: meaning; what to do``.

    ``kernel`` says whether kernel-mode counting (exclude_kernel=0) was asked for.
    ``event_pmu`` (the binding's PMU name; ``""`` for a type no sysfs PMU has) and
    ``core_pmus`` (the CPU PMUs sysfs shows, ``[]`` for none) make the ENOENT line exact;
    without ``core_pmus`` it names both usual causes. ``in_container`` and ``fd_limits``
    (soft, hard) are the host's (``tiptop.host.Host``). ``per_cpu_pmu``: the event's PMU
    counts per CPU only (a sysfs ``cpumask``), which explains an EINVAL on a task.
    """
    code = err.errno or 0
    # EOPNOTSUPP == ENOTSUP on Linux; errorcode picks the latter, the man page the former.
    name = "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, f"errno {code}")
    head = f"{event}: {name}"
    if code in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        if code == errno.ENOENT:
            why = _enoent_why(event_pmu, core_pmus)
        elif code == errno.ENODEV:
            why = "the event is not supported by this CPU (or this core type)"
        else:
            why = "the event needs a hardware feature this machine lacks (no PMU interrupt?)"
        return f"{head}: {why}"
    if code in (errno.EACCES, errno.EPERM):
        return _denied(head, code, paranoid, privileged, kernel, in_container)
    if code == errno.EMFILE or code == errno.ENFILE:
        limits = f"; limit {fd_limits[0]}, hard {fd_limits[1]}" if fd_limits else ""
        return (
            f"{head}: too many open files (one per event per task{limits}): raise it with "
            "ulimit -n, or watch fewer tasks or events"
        )
    if code == errno.ESRCH:
        return f"{head}: the task no longer exists (it exited)"
    if code == errno.EINVAL:
        return _einval(head, event_pmu if per_cpu_pmu else None)
    if code == errno.E2BIG:
        return f"{head}: this kernel rejected the perf_event_attr size (kernel too old?)"
    if code == errno.EBUSY:
        return f"{head}: another tool has exclusive use of the PMU; stop it and retry"
    if code == errno.EBADF:
        return f"{head}: the group leader was closed (its task exited?)"
    return f"{head}: {err.strerror or os.strerror(code)}"


def _denied(
    head: str, code: int, paranoid: int | None, privileged: bool, kernel: bool, in_container: bool
) -> str:
    """EACCES or EPERM: which of perf_event_paranoid, a container's seccomp profile or the
    task's owner refused the open (perf_event_open(2), ERRORS and perf_event_paranoid)."""
    para = _paranoid_text(paranoid)
    if kernel and not privileged and (paranoid is None or paranoid >= 2):
        return (
            f"{head}: permission denied: {para}; counting kernel mode needs root, "
            "CAP_PERFMON or perf_event_paranoid < 2 (drop -K, or run "
            "sysctl kernel.perf_event_paranoid=1)"
        )
    if paranoid is not None and paranoid > 2 and not privileged:
        return (
            f"{head}: permission denied: {para}; run as root, grant CAP_PERFMON, "
            "or sysctl kernel.perf_event_paranoid=2"
        )
    if code == errno.EPERM and (in_container or privileged):
        return (
            f"{head}: operation not permitted: in a container this is usually the "
            "seccomp profile or missing CAP_PERFMON/CAP_SYS_ADMIN; "
            f"{para}"
        )
    return (
        f"{head}: permission denied: the task belongs to another user or is not "
        f"dumpable ({para}); run as root or with CAP_PERFMON to watch it"
    )
