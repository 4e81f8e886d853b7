"""``--by cgroup`` as root: the leaf cgroups counted whole by the kernel's cgroup events
(``tiptop.engine.count.cgroups``), their tasks left without counters of their own; for
batch and live rows (``tiptop.sources.bycgroup``) and the exporter alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tiptop.choices import SeriesBy
from tiptop.host import Host
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.engine.count.cgroups import CgroupCounters
    from tiptop.engine.sampler import Sampler


def cgroup_events(
    opts: Options, host: Host, sampler: Sampler, path_of: Callable[[int], str]
) -> CgroupCounters | None:
    """The cgroup counters of ``--by cgroup`` run as root on cgroup v2 (not with
    ``--task-counters``), handed to the sampler, which owns them from then (a task of a
    covered cgroup gets no counters; the sampler reads them with its tasks': its
    ``cgroup_counts``); None elsewhere: every task counts itself. ``path_of``: a process's
    cgroup path (its ``0::`` line). They may take half the counters' fd budget
    (docs/exporter.md, "Counting whole cgroups")."""
    from tiptop.engine.count.cgroups import CgroupCounters, online_cpus
    from tiptop.kernel.cgroup import unified_root

    if opts.series_by is not SeriesBy.CGROUP or opts.task_counters or host.euid != 0:
        return None
    mount = unified_root(host.sysfs_root)
    if mount is None:
        return None
    counters = CgroupCounters(
        sampler.plan, mount, online_cpus(host.sysfs_root), sampler.messages, sampler.fd_budget // 2
    )
    sampler.count_cgroups(counters, path_of)
    return counters


__all__ = ["cgroup_events"]
