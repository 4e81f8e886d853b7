"""Counting whole cgroups with the kernel's cgroup events, in place of one group per task.

perf_event_open(2) with ``PERF_FLAG_PID_CGROUP`` takes, as ``pid``, an fd of a cgroup's
directory in a hierarchy that has the ``perf_event`` controller, and a ``cpu`` (>= 0): the
event counts every task of that cgroup (and of its descendants) while it runs on that CPU
("per-container system-wide monitoring"; ``perf stat -G``). One group of the screen's plan
per CPU per cgroup counts the whole cgroup, every process in it, a short-lived one
included, exactly: a container of 60 processes costs ``events x CPUs`` fds, not ``events x
60`` (and its processes are not looked at by the counters at all).

*Where.* cgroup v2's hierarchy always has the controller (implicitly: it has no file to
enable), ``/sys/fs/cgroup`` or systemd's hybrid ``/sys/fs/cgroup/unified``; its paths are
``/proc/PID/cgroup``'s ``0::`` lines. A v1 ``perf_event`` hierarchy is not used (its
paths differ per controller). Only a **leaf** cgroup (no child directory when first seen)
is counted so: the kernel counts descendants into their ancestors, and a cgroup with
children is a row of its own tasks only; those tasks keep their own counters
(:meth:`CgroupCounters.covers` is the rule the sampler's attacher asks).

*How many.* Each cgroup takes ``fds_per_cgroup`` = the plan's events x the CPUs. At most
:attr:`CgroupCounters.cap` cgroups are counted at once: ``max_fds // fds_per_cgroup``,
``max_fds`` a share of the fd budget given by the caller, and never more than
:data:`MAX_CGROUPS`. A cgroup past the cap is not covered: its tasks are counted one by one,
as without cgroup events, and the first one says so once in the message log.

*Lifetime.* A cgroup is followed from the first task of it the sampler would have opened
counters on (:meth:`CgroupCounters.covers`) until its directory is gone (its inode checked
at every read), also while none of its tasks is shown: what its short jobs did between two
refreshes is counted. One that gains a child cgroup (its link count, by the same stat)
is closed at that read, its interval not shown: its events would count the child's tasks
too, which are counted with their own cgroup or by themselves. Its tasks then get counters
of their own (:attr:`CgroupCounters.split`), and it is not counted whole again while its
directory lives. The sampler reads them with its tasks' counters
(``engine.sampler``): a cgroup whose events were enabled for no time did not run
(:attr:`~tiptop.frame.CgroupCounts.idle`), so neither did any of its tasks, which the scan
then need not look at, as a task's own counters say of it (``engine.activity``). Its first
read is its baseline (that interval not OK); after it every interval is the difference of
two reads, each CPU's scaled by its own ``Δenabled/Δrunning``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import field

import numpy as np

from tiptop.engine.count.readout import CounterPlan
from tiptop.errors import CounterError, OutOfFds
from tiptop.frame import CgroupCounts
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Group
from tiptop.kernel.group import open_cgroup_group
from tiptop.messages import MessageLog
from tiptop.readonly import mutable

#: The most cgroups counted at once, whatever the fds allow.
MAX_CGROUPS = 1024

#: Opens one group on a cgroup's directory fd and a CPU (``kernel.group.open_cgroup_group``).
Opener = Callable[[int, int, Sequence[Attr]], Group]


@mutable
class _Cgroup:
    """One followed cgroup: its directory, its groups per plan group and CPU, and their
    last reads (values, then enabled and running times)."""

    path: str
    dir_fd: int
    inode: int
    groups: list[list[Group]]
    #: Per plan group, the last read on every CPU (:meth:`CgroupCounters._words`' rows).
    last: list[np.ndarray | None]
    total: np.ndarray
    fresh: bool = True
    fds: int = 0


@mutable
class CgroupCounters:
    """The cgroup events of the followed cgroups (module docstring). ``mount`` is the v2
    hierarchy's mount, ``cpus`` the CPUs counted, ``max_fds`` the fds they may take."""

    plan: CounterPlan
    mount: str
    cpus: Sequence[int]
    messages: MessageLog
    max_fds: int
    opener: Opener = open_cgroup_group
    _followed: dict[str, _Cgroup] = field(default_factory=dict)
    #: Per path: whether it was a leaf when first asked (:meth:`covers`).
    _leaf: dict[str, bool] = field(default_factory=dict)
    #: The plan's attrs as opened on a cgroup: no inheritance (a per-CPU event).
    _attrs: list[tuple[Attr, ...]] = field(default_factory=list)
    fds_used: int = 0
    #: The cgroups the last :meth:`read` stopped counting whole because they gained
    #: child cgroups (:meth:`_split`): their tasks are to get counters of their own.
    split: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._attrs = [
            tuple(a.replace(inherit=False, inherit_thread=False) for a in g.attrs)
            for g in self.plan.groups
        ]
        #: The aliases some group opens (an event not on this machine is never OK: absent,
        #: not zero).
        self._held = np.zeros(len(self.plan.aliases), bool)
        for g in self.plan.groups:
            self._held[g.alias_index] = True
        self._held &= self.plan.available

    @property
    def fds_per_cgroup(self) -> int:
        """fds one cgroup takes: the plan's events on every CPU."""
        return self.plan.fds_per_thread * len(self.cpus)

    @property
    def cap(self) -> int:
        """The most cgroups counted at once."""
        return min(MAX_CGROUPS, self.max_fds // max(self.fds_per_cgroup, 1))

    def covers(self, path: str) -> bool:
        """Whether cgroup ``path``'s tasks are counted here, not one by one: a leaf when
        first asked, followed already or within the cap. Asked once per task, when the
        sampler would open its counters."""
        if path in self._followed:
            return True
        leaf = self._leaf.get(path)
        if leaf is None:
            leaf = self._leaf[path] = _is_leaf(self._dir(path))
        if not leaf or not self.plan.groups:
            return False
        if len(self._followed) >= self.cap:
            self.messages.say(
                "cgroup-events:cap",
                f"more than {self.cap} cgroups to count with cgroup events ({self.fds_per_cgroup} "
                f"fds each): the tasks of the others are counted one by one",
            )
            return False
        return self._open(path)

    def read(self) -> dict[str, CgroupCounts]:
        """Every followed cgroup's interval (module docstring), all cgroups' reads of a plan
        group parsed and differenced at once; a cgroup whose directory is gone is read one
        last time and closed."""
        followed = list(self._followed.values())
        if not followed:
            return {}
        n, k = len(followed), len(self.plan.aliases)
        raw, scaled = np.zeros((n, k)), np.zeros((n, k))
        enabled, running = np.zeros((n, k)), np.zeros((n, k))
        bad = np.zeros((n, k), bool)
        for gi, gdef in enumerate(self.plan.groups):
            now, failed = self._words(followed, gi)
            last = now.copy()  # a new cgroup's baseline: no interval yet
            for c, cg in enumerate(followed):
                before = cg.last[gi]
                if before is not None:
                    last[c] = before
                cg.last[gi] = now[c]
            d = now - last  # (cgroups, CPUs, members + 2): values, then enabled, running
            de, dr = d[:, :, -2], d[:, :, -1]
            factor = np.divide(de, dr, out=np.zeros_like(de), where=dr > 0)
            values = d[:, :, :-2]
            idx = gdef.alias_index
            raw[:, idx] += values.sum(axis=1)
            scaled[:, idx] += (values * factor[:, :, None]).sum(axis=1)
            enabled[:, idx] += de.sum(axis=1)[:, None]
            running[:, idx] += dr.sum(axis=1)[:, None]
            # enabled and never scheduled in on some CPU, or unreadable: not counted
            bad[:, idx] |= (((de > 0) & (dr <= 0)).any(axis=1) | failed)[:, None]
        fresh = np.array([cg.fresh for cg in followed])
        ok = self._held & ~bad & ~fresh[:, None]
        frac = np.divide(running, enabled, out=np.ones((n, k)), where=enabled > 0)
        idle = ~fresh & (enabled.sum(axis=1) == 0) & ~bad.any(axis=1)
        out: dict[str, CgroupCounts] = {}
        self.split = []
        for c, cg in enumerate(followed):
            cg.fresh = False
            cg.total += np.where(ok[c], scaled[c], 0.0)
            now_dir = _stat(self._dir(cg.path))
            if now_dir is not None and now_dir.st_ino == cg.inode and now_dir.st_nlink > 2:
                self._split(cg)  # this interval counted its children's tasks too: not shown
                continue
            out[cg.path] = CgroupCounts(
                raw[c], scaled[c], frac[c], cg.total.copy(), ok[c], bool(idle[c])
            )
            if now_dir is None or now_dir.st_ino != cg.inode:
                self._close(cg)
        return out

    def _words(self, followed: list[_Cgroup], gi: int) -> tuple[np.ndarray, np.ndarray]:
        """Plan group ``gi``'s reads of every followed cgroup on every CPU as float64
        ``(cgroups, CPUs, members + 2)``: each member's value, then the enabled and running
        times (perf_event_open(2), "read_format": ``nr, enabled, running, {value, id}``);
        and which cgroups could not be read (their words zero)."""
        m = len(self.plan.groups[gi].attrs)
        width = 3 + 2 * m
        size = 8 * width
        bufs, failed = [], np.zeros(len(followed), bool)
        zero = bytes(size)
        for c, cg in enumerate(followed):
            for group in cg.groups[gi]:
                try:
                    buf = group.read_raw()
                except OSError:  # the kinds of tiptop.errors are OSErrors too
                    buf = b""
                if len(buf) != size:
                    failed[c], buf = True, zero
                bufs.append(buf)
        words = np.frombuffer(b"".join(bufs), "<u8").reshape(len(followed), -1, width)
        out = np.empty((*words.shape[:2], m + 2))
        out[:, :, :m] = words[:, :, 3::2]
        out[:, :, m] = words[:, :, 1]
        out[:, :, m + 1] = words[:, :, 2]
        return out, failed

    def close(self) -> None:
        """Close every group and directory fd."""
        for cg in list(self._followed.values()):
            self._close(cg)

    # ------------------------------------------------------------------ steps
    def _dir(self, path: str) -> str:
        return f"{self.mount}{path.rstrip('/')}"

    def _open(self, path: str) -> bool:
        """Open the plan's groups on every CPU for ``path``; False (nothing left open) when
        the kernel refuses."""
        try:
            dir_fd = os.open(self._dir(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False
        groups: list[list[Group]] = []
        try:
            for attrs in self._attrs:
                groups.append([self.opener(dir_fd, cpu, attrs) for cpu in self.cpus])
        except (CounterError, OSError) as exc:
            for row in groups:
                for g in row:
                    g.close()
            os.close(dir_fd)
            if isinstance(exc, OutOfFds):
                self.messages.say("cgroup-events:fds", "out of fds for cgroup events")
            self._leaf[path] = False  # its tasks get their own counters
            return False
        fds = sum(g.n_fds for row in groups for g in row)
        k = len(self.plan.aliases)
        cg = _Cgroup(
            path,
            dir_fd,
            _inode(self._dir(path)),
            groups,
            [None] * len(groups),
            np.zeros(k),
            fds=fds,
        )
        self._followed[path] = cg
        self.fds_used += fds + 1
        return True

    def _split(self, cg: _Cgroup) -> None:
        """``cg`` has child cgroups now (a container's runtime or systemd made them under
        it): the kernel counts their tasks into its events too, and those tasks are counted
        by their own cgroup or their own counters, so its events would count them twice.
        It is closed and never counted whole again while its directory lives; its tasks
        get their own counters (:attr:`split`, which the sampler reads)."""
        self._close(cg)
        self._leaf[cg.path] = False
        self.split.append(cg.path)
        self.messages.say(
            "cgroup-events:children",
            f"cgroup {cg.path!r} gained child cgroups, whose tasks its events would count "
            "too: its own tasks are counted one by one from now",
        )

    def _close(self, cg: _Cgroup) -> None:
        for row in cg.groups:
            for g in row:
                g.close()
        os.close(cg.dir_fd)
        self.fds_used -= cg.fds + 1
        del self._followed[cg.path]
        self._leaf.pop(cg.path, None)


def _inode(where: str) -> int:
    """The inode of a cgroup's directory; 0 when it is gone."""
    now = _stat(where)
    return 0 if now is None else now.st_ino


def _stat(where: str) -> os.stat_result | None:
    """A cgroup directory's inode and link count; None when it is gone. A directory of
    cgroupfs links to itself, its parent's entry and each child cgroup's ``..``: its link
    count is 2 plus its child cgroups (fs/kernfs/inode.c, ``kernfs_refresh_inode()``), so
    the stat that tells a removed cgroup also tells one that gained children."""
    try:
        return os.stat(where)
    except OSError:
        return None


def _is_leaf(where: str) -> bool:
    """Whether the cgroup directory ``where`` exists and has no child cgroup."""
    try:
        with os.scandir(where) as entries:
            return not any(e.is_dir(follow_symlinks=False) for e in entries)
    except OSError:
        return False


def online_cpus(sysfs_root: str = "/sys") -> list[int]:
    """The CPUs online (``devices/system/cpu/online``: ranges such as ``0-3,6``); every CPU
    ``os.cpu_count`` knows when unreadable."""
    try:
        with open(f"{sysfs_root}/devices/system/cpu/online") as f:
            text = f.read().strip()
        cpus: list[int] = []
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            cpus += range(int(lo), int(hi or lo) + 1)
        return cpus
    except (OSError, ValueError):
        return list(range(os.cpu_count() or 1))


__all__ = ["MAX_CGROUPS", "CgroupCounters", "CgroupCounts", "online_cpus"]
