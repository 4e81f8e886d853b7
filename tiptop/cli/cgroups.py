"""``--by cgroup`` as root: the leaf cgroups counted whole by the kernel's cgroup events
(``tiptop.engine.count.cgroups``), their tasks left without counters of their own; for
batch and live rows (``tiptop.sources.bycgroup``) and the exporter alike. The exporter,
watching every task, walks the cgroup tree instead of ``/proc``
(``tiptop.engine.cgroupwalk``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tiptop.choices import SeriesBy
from tiptop.host import Host
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.engine.cgroupwalk import CgroupWalker
    from tiptop.engine.count.cgroups import CgroupCounters
    from tiptop.engine.sampler import Sampler
    from tiptop.workload import Workload


def cgroup_events(
    opts: Options, host: Host, sampler: Sampler, path_of: Callable[[int], str]
) -> CgroupCounters | None:
    """The cgroup counters of ``--by cgroup`` run as root on cgroup v2 (not with
    ``--task-counters``), handed to the sampler, which owns them from then (a task of a
    covered cgroup gets no counters; the sampler reads them with its tasks': its
    ``cgroup_counts``); None elsewhere: every task counts itself. ``path_of``: a process's
    cgroup path (its ``0::`` line). They may take half the counters' fd budget
    (docs/exporter.md, "Counting whole cgroups")."""
    counters = _counters(opts, host, sampler)
    if counters is not None:
        sampler.count_cgroups(counters, path_of)
    return counters


def cgroup_walk(
    opts: Options, host: Host, sampler: Sampler, workload_of: Callable[[str], Workload]
) -> CgroupWalker | None:
    """The exporter's frame source for ``--by cgroup`` as root on cgroup v2 watching every
    task (no ``-u``, ``-p`` or ``-H``; not with ``--task-counters``): the cgroup tree's
    rows, the leaves counted whole by their events (docs/exporter.md, "Walking the cgroup
    tree"); None elsewhere: the sampler's tasks are summed by cgroup. ``sampler`` lends
    its plan of the screen's counters and its message log (it is never started); the
    events may take half its fd budget, the cgroups' ``cgroup.procs`` a quarter."""
    from tiptop.engine.cgroupwalk import CgroupWalker
    from tiptop.engine.count.cgroups import MAX_CGROUPS

    some_tasks = opts.uid is not None or opts.only_pid is not None or opts.only_name
    if some_tasks or opts.show_threads:
        return None
    counters = _counters(opts, host, sampler)
    if counters is None:
        return None
    return CgroupWalker(
        sampler.screen,
        counters,
        counters.mount,
        workload_of,
        sampler.messages,
        host.clock,
        max(1, min(MAX_CGROUPS, sampler.fd_budget // 4)),
    )


def _counters(opts: Options, host: Host, sampler: Sampler) -> CgroupCounters | None:
    """The cgroup counters of ``--by cgroup`` as root on cgroup v2, not with
    ``--task-counters``, over half the sampler's fd budget; None elsewhere."""
    from tiptop.engine.count.cgroups import CgroupCounters, online_cpus
    from tiptop.kernel.cgroup import unified_root

    if opts.series_by is not SeriesBy.CGROUP or opts.task_counters or host.euid != 0:
        return None
    mount = unified_root(host.sysfs_root)
    if mount is None:
        return None
    return CgroupCounters(
        sampler.plan, mount, online_cpus(host.sysfs_root), sampler.messages, sampler.fd_budget // 2
    )


__all__ = ["cgroup_events", "cgroup_walk"]
