"""The cgroup of a task, from ``/proc/PID/cgroup`` (proc(5), cgroups(7)), shortened to a
label a person can read (the exporter's labels, the live and batch rows by cgroup).

The file is read once per process while it lives (psutil does not give it); on cgroup v2
the line is ``0::/path``, on v1 the ``name=systemd`` line is taken, else the first one.
:func:`shorten` is the rule docs/exporter.md states:

* Kubernetes: ``.../kubepods...-pod<UID>.slice/cri-containerd-<ID>.scope`` (systemd driver)
  or ``/kubepods/<qos>/pod<UID>/<ID>`` (cgroupfs driver) -> ``k8s/pod<UID>/<ID[:12]>``;
* Docker and podman: ``docker-<ID>.scope``, ``/docker/<ID>``, ``libpod-<ID>.scope`` ->
  ``docker/<ID[:12]>`` (``podman/...``);
* otherwise the path without the ``system.slice`` and ``user.slice`` levels, each part
  without its ``.service``/``.scope``/``.slice`` suffix: ``/system.slice/nginx.service``
  -> ``nginx``, ``/user.slice/user-1000.slice/session-2.scope`` -> ``user-1000/session-2``;
  the root, or an unreadable file, -> ``/``.

A cgroup's name is outside text: a user makes any name it likes in a subtree delegated to
it (as systemd delegates ``user@UID.service``), bytes that are not UTF-8 and escape
sequences included. The path is kept as the file system's bytes decoded losslessly
(``os.fsdecode``), for reading the cgroup's own files; a label is made printable
(``tiptop.outside``): such bytes and every character a terminal may obey as escapes.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Container, Iterable
from typing import NamedTuple

from tiptop.kernel.procfs import read_whole
from tiptop.outside import printable

_SUFFIXES = (".service", ".scope", ".slice")
_DROP = {"system.slice", "user.slice", "kubepods.slice", "kubepods"}
_POD = re.compile(r"pod([0-9a-fA-F_-]{8,})(?:\.slice)?$")
_CONTAINER = re.compile(r"^(?:cri-containerd-|crio-|docker-|libpod-)?([0-9a-f]{12,})(?:\.scope)?$")
_RUNTIME = re.compile(r"^(docker|libpod)-([0-9a-f]{12,})(?:\.scope)?$")


def path_of(text: str) -> str:
    """The cgroup path out of a ``/proc/PID/cgroup`` file's text; ``/`` when none."""
    lines = [ln.split(":", 2) for ln in text.splitlines() if ln.count(":") >= 2]
    for hid, _controllers, path in lines:
        if hid == "0":
            return path or "/"
    for _hid, controllers, path in lines:
        if controllers == "name=systemd":
            return path or "/"
    return lines[0][2] if lines and lines[0][2] else "/"


def shorten(path: str) -> str:
    """The label for a cgroup path, by the rule of the module's docstring; printable."""
    parts = [p for p in printable(path).strip("/").split("/") if p]
    if not parts:
        return "/"
    pod = next((m.group(1) for p in parts if (m := _POD.search(p))), None)
    if pod is not None and any(p.startswith("kubepods") for p in parts):
        last = _CONTAINER.match(parts[-1])
        tail = f"/{last.group(1)[:12]}" if last and not _POD.search(parts[-1]) else ""
        return f"k8s/pod{pod.replace('_', '-')}{tail}"
    runtime = _RUNTIME.match(parts[-1])
    if runtime is not None:
        name = "docker" if runtime.group(1) == "docker" else "podman"
        return f"{name}/{runtime.group(2)[:12]}"
    if len(parts) >= 2 and parts[-2] == "docker" and re.fullmatch(r"[0-9a-f]{12,}", parts[-1]):
        return f"docker/{parts[-1][:12]}"
    kept = []
    for p in parts:
        if p in _DROP:
            continue
        for suffix in _SUFFIXES:
            p = p.removesuffix(suffix)
        kept.append(p)
    return "/".join(kept) or "/"


class CgroupCache:
    """Cgroup path and shortened label per process, read when first asked and again
    whenever it ran (:meth:`follow`). A process is moved by a write of its PID into another
    cgroup's ``cgroup.procs`` (Documentation/admin-guide/cgroup-v2.rst, "Processes"):
    ``systemd-run``, ``cgexec`` and batch schedulers move a child between its fork and its
    exec. One that did not run since it was read has nothing its cgroup would count, so
    its label may wait for its next run. A PID missing from one refresh's rows is
    forgotten (the PID may be reused)."""

    def __init__(self, proc_root: str = "/proc") -> None:
        self.proc_root = proc_root
        #: Per PID: its cgroup path and that path's label.
        self._known: dict[int, tuple[str, str]] = {}
        #: How many times a process was found in another cgroup than the one read before:
        #: what a consumer made of the labels before this changed is stale.
        self.moves = 0

    def _path(self, pid: int) -> str | None:
        """Process ``pid``'s cgroup path, read now; None when unreadable (the file is read
        again each refresh its process ran: :func:`~tiptop.kernel.procfs.read_whole`)."""
        raw = read_whole(f"{self.proc_root}/{pid}/cgroup")
        return None if raw is None else path_of(os.fsdecode(raw))

    def _of(self, pid: int) -> tuple[str, str]:
        """Process ``pid``'s path and label: as kept, else read now and kept (``/`` when
        unreadable)."""
        known = self._known.get(pid)
        if known is None:
            known = self._keep(pid, self._path(pid) or "/")
        return known

    def _keep(self, pid: int, path: str) -> tuple[str, str]:
        """``path`` and its label, kept as process ``pid``'s."""
        known = self._known[pid] = (path, shorten(path))
        return known

    def path(self, pid: int) -> str:
        """The cgroup path of process ``pid`` (:func:`path_of`; ``/`` when unreadable)."""
        return self._of(pid)[0]

    def label(self, pid: int) -> str:
        """The shortened cgroup of process ``pid`` (``/`` when unreadable)."""
        return self._of(pid)[1]

    def follow(self, pids: Iterable[int], ran: Iterable[int] = ()) -> None:
        """One refresh's rows: forget every process not in ``pids``, and read again the
        cgroup of each process in ``ran`` (CPU time over the refresh) already read, once
        however many of its threads' rows ran (``-H``). One that cannot be read now (it
        ended during the refresh: its last row is still to be counted) keeps its cgroup."""
        alive = set(pids)
        for pid in [p for p in self._known if p not in alive]:
            del self._known[pid]
        for pid in set(ran):
            known = self._known.get(pid)
            if known is None:
                continue
            path = self._path(pid)
            if path is not None and path != known[0]:
                self._keep(pid, path)
                self.moves += 1


def unified_root(sysfs_root: str = "/sys") -> str | None:
    """Where the cgroup v2 hierarchy is mounted: ``/sys/fs/cgroup`` (v2 alone) or
    ``/sys/fs/cgroup/unified`` (the hybrid layout of systemd); None without one."""
    for root in (f"{sysfs_root}/fs/cgroup", f"{sysfs_root}/fs/cgroup/unified"):
        if os.path.exists(f"{root}/cgroup.controllers"):
            return root
    return None


def usage_seconds(root: str, path: str) -> float | None:
    """CPU time used by the tasks of leaf cgroup ``path`` since it was made: ``usage_usec``
    of its ``cpu.stat``, present whether the cpu controller is enabled or not
    (Documentation/admin-guide/cgroup-v2.rst, "cpu.stat"). None when unreadable, for the
    root and for a cgroup with children: its usage includes theirs (the count is
    hierarchical), which their own series already count."""
    where = f"{root}{path.rstrip('/')}"
    if path.strip("/") == "":
        return None
    try:
        with os.scandir(where) as entries:
            if any(e.is_dir(follow_symlinks=False) for e in entries):
                return None
        with open(f"{where}/cpu.stat") as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except (OSError, ValueError):
        pass
    return None


class CgroupCpu:
    """CPU seconds of whole leaf cgroups (a service, a container, a job's scope) from
    their own ``cpu.stat`` (cgroup v2), so that a process never seen in a refresh (one
    shorter than an interval) is counted in its cgroup too. A cgroup is followed from the
    first refresh that shows one of its processes until its directory is gone; it is
    counted from then, or from its birth when it was made after the exporter started (its
    directory's ctime, set when the kernel made it). The paths are those of the unified
    hierarchy (``0::`` lines), the ones the labels are made from."""

    def __init__(self, cache: CgroupCache, root: str, started: float | None = None) -> None:
        self.cache = cache
        self.root = root
        self.started = time.time() if started is None else started
        #: Usage at the last read per followed path; a path is dropped when unreadable
        #: (its cgroup was removed), so this holds only live cgroups.
        self._last: dict[str, float] = {}

    def used(self, pids: Iterable[int], idle: Container[str] = ()) -> dict[str, float]:
        """Per label, the CPU seconds its cgroups used since the last call (those of
        ``pids`` and every cgroup followed before). A label any of whose cgroups could
        not be read is left out: its tasks' own CPU times stand for it. A followed cgroup
        in ``idle`` (paths none of whose tasks ran since the last call: their cgroup
        events were enabled for no time, ``tiptop.frame.CgroupCounts.idle``) used none and
        is not read: ``usage_usec`` grows only while one of its tasks runs, and whatever
        ran between the two reads is counted at the next one."""
        paths = set(self._last) | {self.cache.path(pid) for pid in pids}
        out: dict[str, float] = {}
        unread: set[str] = set()
        last: dict[str, float] = {}
        for path in paths:
            label = shorten(path)
            if path in idle and path in self._last:
                out[label] = out.get(label, 0.0)
                last[path] = self._last[path]
                continue
            usage = usage_seconds(self.root, path)
            if usage is None:
                unread.add(label)
                continue
            before = self._last.get(path)
            if before is None:
                before = 0.0 if self._made_since_start(path) else usage
            out[label] = out.get(label, 0.0) + max(usage - before, 0.0)
            last[path] = usage
        self._last = last
        return {label: s for label, s in out.items() if label not in unread}

    def _made_since_start(self, path: str) -> bool:
        try:
            return os.stat(f"{self.root}{path.rstrip('/')}").st_ctime >= self.started
        except OSError:
            return False


# ----------------------------------------------------------- the cpu controller's limits
#
# A cgroup's CPU limit (CFS bandwidth: a quota of CPU time per period,
# Documentation/scheduler/sched-bwc.rst) stops its tasks when the quota is used up until the
# period ends: they are *throttled*. The kernel counts, per cgroup, the time its run queues
# spent throttled: ``throttled_usec`` of cgroup v2's ``cpu.stat`` (``throttled_time``, in
# ns, in v1), and in ``cpu.stat.local`` the time its tasks were throttled by its own limit or
# an ancestor's (Documentation/admin-guide/cgroup-v2.rst, "cpu.stat.local"; Linux 6.8).


def cpu_path_of(text: bytes, v2: bool) -> str | None:
    """A task's cgroup in the ``cpu`` controller's hierarchy, from its ``/proc/PID/cgroup``
    (cgroups(7): ``ID:CONTROLLERS:PATH`` lines; v2's is ``0::PATH``); None when the file
    names none. The path is decoded as the file system's names are (``os.fsdecode``): it
    names a directory to open, never text to show."""
    for line in text.splitlines():
        hid, _, rest = line.partition(b":")
        controllers, sep, path = rest.partition(b":")
        if not sep:
            continue
        if (v2 and hid == b"0" and not controllers) or (
            not v2 and b"cpu" in controllers.split(b",")
        ):
            return os.fsdecode(path) or "/"
    return None


def cpu_dir(mount: str, root: str, path: str) -> str:
    """The directory of cgroup ``path`` (relative to the hierarchy's root, as
    ``/proc/PID/cgroup`` gives it) under a hierarchy mounted at ``mount`` from its cgroup
    ``root``."""
    if root != "/" and path.startswith(root):
        path = path[len(root) :]
    return mount + path.rstrip("/")


def _stat_value(where: str, names: tuple[str, ...]) -> int | None:
    """The first of ``names`` found in the flat-keyed file ``where``."""
    try:
        with open(where, "rb") as f:
            for line in f.read(4096).splitlines():
                key, _, value = line.partition(b" ")
                if key.decode("ascii", "replace") in names:
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def throttled_ns(mount: str, root: str, path: str, v2: bool) -> int | None:
    """The time cgroup ``path``'s tasks were throttled so far, in ns: its
    ``cpu.stat.local`` (its own limit's and its ancestors'), else, on kernels without it,
    the largest of its own and its ancestors' ``cpu.stat`` (an ancestor's throttled run
    queues hold every descendant's tasks). None for the root (it has no limit) and when
    nothing can be read."""
    if path.strip("/") == "":
        return None
    names = ("throttled_usec",) if v2 else ("throttled_time",)
    scale = 1000 if v2 else 1
    here = cpu_dir(mount, root, path)
    local = _stat_value(f"{here}/cpu.stat.local", names)
    if local is not None:
        return local * scale
    found = None
    for d in _ancestors(mount, root, path):
        own = _stat_value(f"{d}/cpu.stat", names)
        if own is not None:
            found = own * scale if found is None else max(found, own * scale)
    return found


def cpu_limit(mount: str, root: str, path: str, v2: bool) -> float | None:
    """The CPUs cgroup ``path``'s tasks may use at most: the smallest quota / period of it
    and its ancestors (v2 ``cpu.max``: ``QUOTA PERIOD`` or ``max PERIOD``; v1
    ``cpu.cfs_quota_us``, -1 for none, over ``cpu.cfs_period_us``); None when none limits it."""
    limits = []
    for d in _ancestors(mount, root, path):
        try:
            if v2:
                with open(f"{d}/cpu.max", "rb") as f:
                    quota, period = f.read(64).split()
            else:
                with open(f"{d}/cpu.cfs_quota_us", "rb") as f:
                    quota = f.read(32).strip()
                with open(f"{d}/cpu.cfs_period_us", "rb") as f:
                    period = f.read(32).strip()
            if quota not in (b"max", b"-1") and int(period) > 0:
                limits.append(int(quota) / int(period))
        except (OSError, ValueError):
            continue
    return min(limits) if limits else None


def _ancestors(mount: str, root: str, path: str) -> list[str]:
    """The directories of cgroup ``path`` and of each ancestor below the hierarchy's root."""
    parts = [p for p in path.split("/") if p]
    return [cpu_dir(mount, root, "/" + "/".join(parts[:i])) for i in range(len(parts), 0, -1)]


# ------------------------------------------------------- the v2 hierarchy walked, not /proc
#
# The exporter's cgroup walk (``tiptop.engine.cgroupwalk``) reads each cgroup's own files
# (Documentation/admin-guide/cgroup-v2.rst): which cgroups exist (the hierarchy's
# directories), the processes in one (``cgroup.procs``) and its CPU (``cpu.stat``).


class CgroupDir(NamedTuple):
    """One cgroup found by :func:`walk_hierarchy`: its path as ``/proc/PID/cgroup``'s
    ``0::`` line writes it (``/`` for the root), its directory's inode (the kernel's cgroup
    id: a cgroup made again under the same path has another) and whether it has no child
    cgroup."""

    path: str
    inode: int
    leaf: bool


def walk_hierarchy(mount: str) -> list[CgroupDir]:
    """Every cgroup of the hierarchy mounted at ``mount``, parents before their children;
    a directory that goes while it is walked is left out. ``os.scandir`` gives each
    entry's type and inode without a ``stat`` (kernfs fills ``d_type`` and ``d_ino``), and
    no symbolic link is followed (cgroupfs has none; a name is never trusted)."""
    try:
        root_inode = os.stat(mount).st_ino
    except OSError:
        return []
    out: list[CgroupDir] = []
    todo = [("", mount, root_inode)]
    while todo:
        rel, where, inode = todo.pop()
        children = []
        try:
            with os.scandir(where) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        children.append((f"{rel}/{e.name}", e.path, e.inode()))
        except OSError:
            continue
        out.append(CgroupDir(rel or "/", inode, not children))
        todo += reversed(children)
    return out


class CpuStat(NamedTuple):
    """A cgroup's ``cpu.stat`` so far, in seconds: ``usage_usec`` (the scheduler's run time
    of its tasks and its descendants'), ``user_usec`` and ``system_usec`` (the same split by
    the tick's accounting), ``throttled_usec`` (its run queues held by its own CPU limit;
    0 without the ``cpu`` controller)."""

    usage: float
    user: float
    system: float
    throttled: float


def read_cpu_stat(where: str) -> CpuStat | None:
    """The ``cpu.stat`` of the cgroup directory ``where``; None when it is gone or says no
    ``usage_usec``."""
    try:
        with open(f"{where}/cpu.stat", "rb") as f:
            text = f.read(4096)
    except OSError:
        return None
    found = dict.fromkeys((b"usage_usec", b"user_usec", b"system_usec", b"throttled_usec"), 0)
    seen = False
    for line in text.splitlines():
        key, _, value = line.partition(b" ")
        if key in found:
            try:
                found[key] = int(value)
            except ValueError:
                return None
            seen = seen or key == b"usage_usec"
    if not seen:
        return None
    usage, user, system, throttled = (v / 1e6 for v in found.values())
    return CpuStat(usage, user, system, throttled)


def procs_fd(where: str) -> int | None:
    """An fd of the cgroup directory ``where``'s ``cgroup.procs``, kept open by its reader
    (:func:`count_procs`); None when the cgroup is gone."""
    try:
        return os.open(f"{where}/cgroup.procs", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def count_procs(fd: int) -> int | None:
    """The processes in a cgroup now: the lines of its ``cgroup.procs`` read again from
    the start through ``fd`` (:func:`procs_fd`; a read at offset 0 of a cgroup file starts
    its listing afresh: one ``pread`` and no path walk per refresh); None when unreadable
    (the cgroup was removed)."""
    count, offset, size = 0, 0, 65536
    try:
        while True:
            chunk = os.pread(fd, size, offset)
            count += chunk.count(b"\n")
            offset += len(chunk)
            if len(chunk) < size:  # the listing's end: no second pass over the cgroup
                return count
    except OSError:
        return None


__all__ = [
    "CgroupCache",
    "CgroupCpu",
    "CgroupDir",
    "CpuStat",
    "count_procs",
    "cpu_dir",
    "cpu_limit",
    "cpu_path_of",
    "path_of",
    "procs_fd",
    "read_cpu_stat",
    "shorten",
    "throttled_ns",
    "unified_root",
    "usage_seconds",
    "walk_hierarchy",
]
