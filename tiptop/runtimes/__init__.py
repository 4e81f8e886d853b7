"""Who runs in a cgroup, by name, from the cgroup's path and the container runtimes' own
state on disk (never a network API): :class:`~.resolve.Workloads`, the cache that rows by
cgroup and the exporter ask; :mod:`.layouts` (the paths' layouts, pure), :mod:`.state` (the
runtimes' state files, read as untrusted). docs/exporter.md, "Who runs in a cgroup"."""

from tiptop.runtimes.resolve import Workloads, hierarchy_mount

__all__ = ["Workloads", "hierarchy_mount"]
