"""The facts of this machine and this process that decide what tiptop may count.

One :class:`Host` is read by the command line (:meth:`Host.read`) and passed down to the
engine, the live view and ``--check``, so that no module reads ``perf_event_paranoid`` or
its own capabilities again, and the rules below are unit-tested with a ``Host`` that says
"uid 1000, paranoid 2" instead of through ``setpriv``. Imports nothing from tiptop.

*Rules* (perf_event_open(2), "perf_event related configuration files"; the kernel's
``perf_allow_kernel()`` and ``perfmon_capable()``, include/linux/perf_event.h and
include/linux/capability.h):

- *privileged* means euid 0, or ``CAP_PERFMON`` (Linux 5.8+) or ``CAP_SYS_ADMIN`` in the
  effective set: such a process may count kernel mode whatever the paranoid level;
- kernel-mode counting (``exclude_kernel=0``, ``-K``) is allowed when privileged or when
  ``perf_event_paranoid`` < 2; at 2 (the usual default) only user mode is counted;
- a non-root user watches the processes whose *real* uid is its effective uid (the
  original tiptop's rule; the kernel's ``ptrace_may_access`` check refuses the others).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable

from tiptop.readonly import readonly

#: Capability bits (include/uapi/linux/capability.h).
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38


@readonly
class Clock:
    """Where the engine reads the time: ``monotonic`` (seconds, for scan intervals and
    counter windows) and ``wall`` (Unix time, a frame's timestamp). Tests give the engine
    a fake one in their :class:`Host` instead of patching :mod:`time`."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time


@readonly
class CpuCgroups:
    """Where the cgroup hierarchy of the ``cpu`` controller (CPU bandwidth limits and their
    throttling, Documentation/scheduler/sched-bwc.rst) is mounted, from
    ``/proc/self/mountinfo`` (proc(5)): a v1 hierarchy whose options name ``cpu``, else the
    v2 one where ``cgroup.controllers`` lists ``cpu``."""

    #: The mount point (``/sys/fs/cgroup/cpu``, ``/sys/fs/cgroup``).
    mount: str
    #: The hierarchy is cgroup v2 (``0::`` lines of ``/proc/PID/cgroup``).
    v2: bool
    #: The cgroup mounted there (mountinfo's root field): ``/`` unless a subtree was
    #: bind-mounted; ``/proc/PID/cgroup`` paths are relative to the hierarchy's root.
    root: str = "/"


@readonly
class Host:
    """What this machine and process allow; see the module doc for the rules."""

    proc_root: str = "/proc"
    sysfs_root: str = "/sys"
    uid: int = 0
    euid: int = 0
    #: ``/proc/sys/kernel/perf_event_paranoid``; None when absent (no perf events).
    paranoid: int | None = 2
    #: ``CapEff`` of this process (a bit mask).
    capabilities: int = 0
    #: RLIMIT_NOFILE after :meth:`read` raised the soft limit to the hard one.
    fd_soft: int = 1024
    fd_hard: int = 1024
    #: fds this process had open when the host was read.
    fds_in_use: int = 16
    #: ``sysconf(_SC_CLK_TCK)``: the unit of ``/proc/PID/stat`` times.
    clk_tck: int = 100
    #: ``/.dockerenv`` or ``/run/.containerenv`` exists.
    in_container: bool = False
    #: The file that names the CPU (family, model; proc(5) ``/proc/cpuinfo``), read by
    #: ``tiptop.cli.screens.host_target`` for the screens' ``arch``/``model`` gating; a
    #: test names another file to be the CPU it describes (tests/support/as_cpu.py).
    cpuinfo: str = "/proc/cpuinfo"
    #: SMT is active: a core runs more than one online hardware thread (sysfs
    #: ``devices/system/cpu/smt/active``, Documentation/ABI/testing/sysfs-devices-system-cpu;
    #: False where the file is absent). Before Ice Lake a task's top-down counts are then not
    #: its own (tiptop/screens/deviations.py, kind ``smt``).
    smt_active: bool = False
    #: Some CPUs run without the scheduler's tick (``nohz_full=``: sysfs
    #: ``devices/system/cpu/nohz_full`` lists them, Documentation/timers/no_hz.rst; False
    #: where it lists none or is absent). There a lone running task's CPU time is charged
    #: about once a second, so its process's CPU-time clock can stand while it runs
    #: (``engine.count.counters.RunClocks`` is then not used).
    tickless: bool = False
    #: The clock the engine reads.
    clock: Clock = Clock()
    #: CPUs online (``sysconf(_SC_NPROCESSORS_ONLN)``).
    cpus: int = 1
    #: ``kernel.task_delayacct`` (``/proc/sys/kernel/task_delayacct``): whether the kernel
    #: counts the time tasks wait for block I/O (Documentation/accounting/delay-accounting.rst);
    #: None when the kernel has no such setting.
    delayacct: bool | None = None
    #: The ``cpu`` controller's hierarchy, or None when none is mounted.
    cpu_cgroups: CpuCgroups | None = None

    @classmethod
    def read(
        cls, proc_root: str = "/proc", sysfs_root: str = "/sys", *, raise_fds: bool = True
    ) -> Host:
        """This machine's facts; with ``raise_fds`` the soft fd limit is raised to the
        hard one first (one fd per event per task adds up quickly: perf_event_open(2)
        returns one fd per event)."""
        soft, hard = _raise_fd_limit() if raise_fds else resource.getrlimit(resource.RLIMIT_NOFILE)
        try:
            in_use = len(os.listdir(os.path.join(proc_root, "self/fd")))
        except OSError:
            in_use = 16
        return cls(
            proc_root=proc_root,
            sysfs_root=sysfs_root,
            uid=os.getuid(),
            euid=os.geteuid(),
            paranoid=_read_paranoid(proc_root),
            capabilities=_cap_eff(proc_root),
            fd_soft=soft,
            fd_hard=hard,
            fds_in_use=in_use,
            clk_tck=os.sysconf("SC_CLK_TCK"),
            in_container=os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"),
            cpuinfo=os.path.join(proc_root, "cpuinfo"),
            smt_active=_read_smt_active(sysfs_root),
            tickless=_read_tickless(sysfs_root),
            cpus=os.sysconf("SC_NPROCESSORS_ONLN"),
            delayacct=_read_delayacct(proc_root),
            cpu_cgroups=cpu_cgroups(proc_root),
        )

    @property
    def root(self) -> bool:
        """Effective uid 0."""
        return self.euid == 0

    @property
    def privileged(self) -> bool:
        """Root, or CAP_PERFMON or CAP_SYS_ADMIN effective (the kernel's perfmon_capable)."""
        caps = self.capabilities
        return self.root or bool(caps & (1 << CAP_PERFMON) or caps & (1 << CAP_SYS_ADMIN))

    @property
    def kernel_counting_allowed(self) -> bool:
        """Whether ``exclude_kernel=0`` may be asked for: privileged, or paranoid < 2."""
        return self.privileged or (self.paranoid is not None and self.paranoid < 2)

    def kernel_refusal(self) -> str | None:
        """Why ``-K`` (and the live ``K`` key) is refused here, or None when it is allowed:
        the original's two sentences on one line, with the level found and the way out."""
        if self.kernel_counting_allowed:
            return None
        return (
            "Kernel mode (-K --kernel) not available. You are not root, the binary is not "
            f"setuid, and the paranoia level is too high (perf_event_paranoid is "
            f"{self.paranoid}; sysctl kernel.perf_event_paranoid=1 allows it)."
        )

    def may_watch(self, real_uid: int) -> bool:
        """Whether a process of real uid ``real_uid`` is shown (own processes only unless
        root; see the module doc)."""
        return self.root or real_uid == self.euid

    @property
    def fd_budget(self) -> int:
        """fds counters may take: the soft limit less what is open and a reserve for
        everything else tiptop opens (files, the terminal, ``/proc`` reads)."""
        return max(self.fd_soft - self.fds_in_use - fd_reserve(self.fd_soft), 0)


def fd_reserve(limit: int) -> int:
    """fds kept free for everything else tiptop opens: 64 at usual limits, an eighth of
    a small one (at least 8), so that ``ulimit -n 64`` still counts the busiest tasks."""
    return min(64, max(8, limit // 8))


def _one_line(root: str, path: str) -> str | None:
    """The text of the kernel's one-line file ``ROOT/PATH`` (a /proc setting, a sysfs
    attribute), stripped; None when absent or unreadable."""
    try:
        with open(os.path.join(root, path)) as f:
            return f.read().strip()
    except OSError:
        return None


def _read_delayacct(proc_root: str) -> bool | None:
    text = _one_line(proc_root, "sys/kernel/task_delayacct")
    return None if text is None else text == "1"


def cpu_cgroups(proc_root: str = "/proc") -> CpuCgroups | None:
    """Where the ``cpu`` controller's hierarchy is mounted (:class:`CpuCgroups`), from this
    process's ``mountinfo``: each line is ``ID PARENT DEV ROOT POINT OPTIONS ... - TYPE
    SOURCE SUPER-OPTIONS`` (proc(5)); a v1 hierarchy is preferred (in the hybrid layout the
    v2 one has no controllers)."""
    try:
        with open(os.path.join(proc_root, "self/mountinfo")) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    v2: CpuCgroups | None = None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields, kind = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(kind) < 3:
            continue
        root, point = _unescape(fields[3]), _unescape(fields[4])
        if kind[0] == "cgroup" and "cpu" in kind[2].split(","):
            return CpuCgroups(point, False, root)
        if kind[0] == "cgroup2" and v2 is None and _lists_cpu(point):
            v2 = CpuCgroups(point, True, root)
    return v2


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _lists_cpu(point: str) -> bool:
    try:
        with open(os.path.join(point, "cgroup.controllers")) as f:
            return "cpu" in f.read().split()
    except OSError:
        return False


def _read_paranoid(proc_root: str) -> int | None:
    text = _one_line(proc_root, "sys/kernel/perf_event_paranoid")
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _read_smt_active(sysfs_root: str) -> bool:
    """``devices/system/cpu/smt/active`` is 1; False when it is 0, absent or unreadable."""
    return _one_line(sysfs_root, "devices/system/cpu/smt/active") == "1"


def _read_tickless(sysfs_root: str) -> bool:
    """``devices/system/cpu/nohz_full`` lists some CPU (drivers/base/cpu.c prints the mask
    as a CPU list, empty when none; older kernels print ``(null)``); False when absent (a
    kernel without ``CONFIG_NO_HZ_FULL``) or unreadable."""
    return _one_line(sysfs_root, "devices/system/cpu/nohz_full") not in (None, "", "(null)")


def _cap_eff(proc_root: str) -> int:
    try:
        with open(os.path.join(proc_root, "self/status")) as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _raise_fd_limit() -> tuple[int, int]:
    """Raise RLIMIT_NOFILE's soft limit to the hard one; returns the new (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft, hard
