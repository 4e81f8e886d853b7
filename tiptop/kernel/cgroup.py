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
from collections.abc import Iterable

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
    """Cgroup path and shortened label per process, read once while the process is seen: a
    PID missing from one refresh's rows is forgotten (stale then: the PID may be reused),
    so a reused PID is read again."""

    def __init__(self, proc_root: str = "/proc") -> None:
        self.proc_root = proc_root
        #: Per PID: its cgroup path and that path's label.
        self._known: dict[int, tuple[str, str]] = {}

    def _read(self, pid: int) -> tuple[str, str]:
        known = self._known.get(pid)
        if known is None:
            try:
                with open(f"{self.proc_root}/{pid}/cgroup", "rb") as f:
                    path = path_of(os.fsdecode(f.read()))
            except OSError:
                path = "/"
            known = self._known[pid] = (path, shorten(path))
        return known

    def path(self, pid: int) -> str:
        """The cgroup path of process ``pid`` (:func:`path_of`; ``/`` when unreadable)."""
        return self._read(pid)[0]

    def label(self, pid: int) -> str:
        """The shortened cgroup of process ``pid`` (``/`` when unreadable)."""
        return self._read(pid)[1]

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget every process not in ``pids`` (the rows of the latest refresh)."""
        alive = set(pids)
        for pid in [p for p in self._known if p not in alive]:
            del self._known[pid]


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

    def used(self, pids: Iterable[int]) -> dict[str, float]:
        """Per label, the CPU seconds its cgroups used since the last call (those of
        ``pids`` and every cgroup followed before). A label any of whose cgroups could
        not be read is left out: its tasks' own CPU times stand for it."""
        paths = set(self._last) | {self.cache.path(pid) for pid in pids}
        out: dict[str, float] = {}
        unread: set[str] = set()
        last: dict[str, float] = {}
        for path in paths:
            label = shorten(path)
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


__all__ = [
    "CgroupCache",
    "CgroupCpu",
    "cpu_dir",
    "cpu_limit",
    "cpu_path_of",
    "path_of",
    "shorten",
    "throttled_ns",
    "unified_root",
    "usage_seconds",
]
