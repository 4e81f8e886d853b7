"""A cgroup's :class:`~tiptop.workload.Workload`, cached per cgroup.

The path's layout first (:mod:`.layouts`), then the names its runtime's state on disk gives
(:mod:`.state`), never a network API. A name is taken only when the state agrees with the
path: the state file is the container's own (found under its id), and a pod uid the path
gives is the one the state names; an unreadable or absent file, or one that disagrees,
leaves the id alone: never a wrong name.

*The cache* (:class:`Workloads`, owned by its user: the rows by cgroup, the exporter) keys
each cgroup by its path and its directory's inode: a cgroup removed and made again under the
same path (a restarted pod's container, a service started again) is a new directory, with a
new inode, and is resolved again. An entry is stale when the inode under its path changed,
or when one of the state files it was resolved from (or looked for and did not find)
changed: the inode and the files' :data:`~.state.Signature` are looked at again at most
every :attr:`Workloads.recheck` seconds (a container renamed, a state file written after the
cgroup was made). At most :attr:`Workloads.capacity` cgroups are kept, the least recently
asked for dropped first.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from tiptop.kernel.cgroup import unified_root
from tiptop.runtimes import state
from tiptop.runtimes.layouts import ID_PREFIX, Layout, layout
from tiptop.workload import Workload, WorkloadKind

#: The cgroups kept (:class:`Workloads`).
CAPACITY = 4096
#: Seconds between two looks at the state files an entry was resolved from.
RECHECK = 5.0


@dataclass(eq=False, slots=True)
class _Entry:
    """One cgroup's resolved identity and what it was resolved from."""

    inode: int
    workload: Workload
    #: The state files looked at, each with its signature then.
    sources: tuple[tuple[str, state.Signature], ...]
    checked: float


class Workloads:
    """Who runs in each cgroup (module docstring). ``mount`` is where the hierarchy of the
    paths is mounted (``/sys/fs/cgroup`` on cgroup v2, ``/sys/fs/cgroup/unified`` in
    systemd's hybrid layout; None: no inode is read, each path is one cgroup);
    ``state_root`` where the runtimes' ``/run`` and ``/var/lib`` are (``/``; a
    DaemonSet may mount the host's elsewhere)."""

    def __init__(
        self,
        mount: str | None,
        state_root: str = "/",
        *,
        capacity: int = CAPACITY,
        recheck: float = RECHECK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mount = mount
        self.state_root = state_root
        self.capacity = capacity
        self.recheck = recheck
        self.clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._podman = state.PodmanList(state_root)
        #: Resolutions made (a test's and a benchmark's count of cache misses).
        self.resolved = 0

    def of(self, path: str) -> Workload:
        """The workload of the cgroup at ``path`` (as ``/proc/PID/cgroup`` gives it). Within
        :attr:`recheck` seconds of its last look an entry is taken as it is: a dict lookup,
        no system call (what a refresh asks for every process)."""
        entry = self._entries.get(path)
        now = self.clock()
        if entry is not None:
            self._entries.move_to_end(path)
            if now - entry.checked < self.recheck:
                return entry.workload
        inode = self._inode(path)
        if entry is not None and entry.inode == inode:
            entry.checked = now
            if all(state.signature(p) == sig for p, sig in entry.sources):
                return entry.workload
        workload, sources = self._resolve(path)
        self._entries[path] = _Entry(inode, workload, sources, now)
        self._entries.move_to_end(path)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return workload

    def _inode(self, path: str) -> int:
        """The inode of the cgroup's directory; 0 when it cannot be read."""
        if self.mount is None:
            return 0
        try:
            return os.stat(f"{self.mount}{path.rstrip('/')}").st_ino
        except OSError:
            return 0

    def _resolve(self, path: str) -> tuple[Workload, tuple[tuple[str, state.Signature], ...]]:
        """The path's layout named by its runtime's state, and the state files looked at."""
        self.resolved += 1
        found = layout(path)
        if found.runtime is None or not found.trusted:
            return found.workload, ()
        names, looked = self._names(found)
        sources = tuple((p, state.signature(p)) for p in looked)
        return named(found, names), sources

    def _names(self, found: Layout) -> tuple[state.Names | None, list[str]]:
        """What the state of the layout's runtime (any, when the path does not say) tells
        of its container, and every file looked at."""
        root, cid = self.state_root, found.container_id
        looked: list[str] = []
        readers = {"containerd": state.containerd, "cri-o": state.crio, "docker": state.docker}
        if found.runtime == "podman":
            listed, _ = self._podman.names()
            looked.append(self._podman.path)
            name = listed.get(cid, "")
            return (state.Names("podman", name=name) if name else None), looked
        for runtime, reader in readers.items():
            if found.runtime not in ("", runtime):
                continue
            names, paths = reader(root, cid)
            looked += paths
            if names is not None:
                return names, looked
        return None, looked


def hierarchy_mount(sysfs_root: str = "/sys") -> str | None:
    """Where the hierarchy whose paths ``tiptop.kernel.cgroup.path_of`` takes is mounted:
    cgroup v2's (``/sys/fs/cgroup``, or ``/sys/fs/cgroup/unified`` in systemd's hybrid
    layout), else v1's ``name=systemd`` one; None when neither is there."""
    v2 = unified_root(sysfs_root)
    if v2 is not None:
        return v2
    v1 = f"{sysfs_root}/fs/cgroup/systemd"
    return v1 if os.path.isdir(v1) else None


def named(found: Layout, names: state.Names | None) -> Workload:
    """The layout's workload with the state's names, where they agree with the path."""
    workload = found.workload
    if names is None:
        return workload
    if workload.kind is WorkloadKind.K8S:
        if not names.pod or not names.namespace:
            return workload
        if workload.uid and names.uid and names.uid != workload.uid:
            return workload  # another pod's state: the id alone
        prefix = ID_PREFIX.get(names.runtime, "")
        return replace(
            workload,
            namespace=names.namespace,
            pod=names.pod,
            container="" if names.sandbox else names.container,
            container_id=f"{prefix}{found.container_id}",
        )
    return replace(workload, container=names.name) if names.name else workload


__all__ = ["CAPACITY", "RECHECK", "Workloads", "hierarchy_mount", "named"]
