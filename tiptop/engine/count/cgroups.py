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

*Lifetime.* A cgroup is followed (:meth:`CgroupCounters.follow`) from the first refresh
that shows one of its tasks until its directory is gone (its inode checked at every read),
also while none of its tasks is shown: what its short jobs did between two refreshes is
counted. Its first read is its baseline (that interval not OK); after it every interval
is the difference of two reads, each CPU's scaled by its own ``Δenabled/Δrunning``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tiptop.engine.count.readout import CounterPlan
from tiptop.errors import CounterError, OutOfFds
from tiptop.frame import CgroupCounts
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Group
from tiptop.kernel.group import open_cgroup_group
from tiptop.messages import MessageLog

#: The most cgroups counted at once, whatever the fds allow.
MAX_CGROUPS = 1024

#: Opens one group on a cgroup's directory fd and a CPU (``kernel.group.open_cgroup_group``).
Opener = Callable[[int, int, Sequence[Attr]], Group]


@dataclass(eq=False)
class _Cgroup:
    """One followed cgroup: its directory, its groups per plan group and CPU, and their
    last reads (values, then enabled and running times)."""

    path: str
    dir_fd: int
    inode: int
    groups: list[list[Group]]
    last: list[list[np.ndarray | None]]
    total: np.ndarray
    fresh: bool = True
    fds: int = 0


@dataclass(eq=False)
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

    def __post_init__(self) -> None:
        self._attrs = [
            tuple(a.replace(inherit=False, inherit_thread=False) for a in g.attrs)
            for g in self.plan.groups
        ]

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

    def follow(self, paths: Iterable[str]) -> None:
        """Follow the covered ones of ``paths`` (the cgroups of a refresh's rows)."""
        for path in paths:
            if path not in self._followed and self._leaf.get(path, False):
                self.covers(path)

    def read(self) -> dict[str, CgroupCounts]:
        """Every followed cgroup's interval (module docstring); a cgroup whose directory
        is gone is read one last time and closed."""
        out: dict[str, CgroupCounts] = {}
        for path, cg in list(self._followed.items()):
            out[path] = self._read(cg)
            if _inode(self._dir(path)) != cg.inode:
                self._close(cg)
        return out

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
            [[None] * len(row) for row in groups],
            np.zeros(k),
            fds=fds,
        )
        self._followed[path] = cg
        self.fds_used += fds + 1
        return True

    def _read(self, cg: _Cgroup) -> CgroupCounts:
        """One cgroup's interval since its last read."""
        k = len(self.plan.aliases)
        raw, scaled = np.zeros(k), np.zeros(k)
        enabled, running = np.zeros(k), np.zeros(k)
        bad = np.zeros(k, bool)
        for gi, gdef in enumerate(self.plan.groups):
            for ci, group in enumerate(cg.groups[gi]):
                try:
                    r = group.read()
                except OSError:
                    bad[gdef.alias_index] = True
                    continue
                now = np.concatenate(
                    [r.values.astype(np.float64), [r.time_enabled, r.time_running]]
                )
                before, cg.last[gi][ci] = cg.last[gi][ci], now
                if before is None:
                    continue
                d = now - before
                de, dr = d[-2], d[-1]
                np.add.at(raw, gdef.alias_index, d[:-2])
                np.add.at(enabled, gdef.alias_index, de)
                np.add.at(running, gdef.alias_index, dr)
                if dr > 0:
                    np.add.at(scaled, gdef.alias_index, d[:-2] * (de / dr))
                elif de > 0:  # enabled, never scheduled in: not counted
                    bad[gdef.alias_index] = True
        held = np.zeros(k, bool)  # an event no group opens (not on this machine): not OK
        for gdef in self.plan.groups:
            held[gdef.alias_index] = True
        ok = held & self.plan.available & ~bad & (not cg.fresh)
        cg.fresh = False
        cg.total += np.where(ok, scaled, 0.0)
        frac = np.divide(running, enabled, out=np.ones(k), where=enabled > 0)
        return CgroupCounts(raw, scaled, frac, cg.total.copy(), ok)

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
    try:
        return os.stat(where).st_ino
    except OSError:
        return 0


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
