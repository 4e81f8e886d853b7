"""``tiptop --serve [HOST:]PORT`` and ``--textfile PATH`` wiring: the sampler built as for
batch mode, exported by ``tiptop.exporter`` until SIGTERM, SIGINT or ``-n`` refreshes. Its
start line is the URL served, with what guards it (``tiptop: serving
https://127.0.0.1:9464/metrics with basic auth (1 user)``).

What is exported is what this user may see: without root, only the user's own tasks (as
``-u`` would choose them); command lines only with ``-c`` and ``--by pid``. docs/exporter.md
is the guide.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tiptop.choices import SeriesBy
from tiptop.cli.ending import Ending
from tiptop.cli.run import check_privileges, make_sampler
from tiptop.cli.screens import ScreenSet, fallback_screen, pick_screen
from tiptop.host import Host
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.engine.sampler import Sampler
    from tiptop.exporter.textfile import Textfile
    from tiptop.frame import CgroupCounts, Frame, FrameSource
    from tiptop.kernel.cgroup import CgroupCache
    from tiptop.workload import Workload


def _targets(
    opts: Options, say: Callable[[str], None]
) -> tuple[tuple[str, int] | None, Textfile | None]:
    """Where to export, checked before anything else opens: the ``--serve`` address (None
    without it) and the ``--textfile`` directory opened (a symlink, device, FIFO or
    directory at PATH refused)."""
    from tiptop.exporter.serve import parse_address
    from tiptop.exporter.textfile import Textfile, suffix_warning

    address = parse_address(opts.serve) if opts.serve else None
    if opts.textfile is None:
        return address, None
    warning = suffix_warning(opts.textfile)
    if warning:
        say(warning)
    return address, Textfile(opts.textfile)


def cpu_since_birth(host: Host, pid: int) -> float | None:
    """utime + stime of process ``pid`` since its birth, in seconds (``/proc/PID/stat``,
    proc(5)), or None when it is gone."""
    from tiptop.errors import TaskGone
    from tiptop.kernel.procfs import read_stat

    try:
        stat = read_stat(f"{host.proc_root}/{pid}/stat")
    except (TaskGone, OSError):
        return None
    return (stat.utime + stat.stime) / host.clk_tck


def _cgroup_cpu(
    opts: Options, host: Host, cgroups: CgroupCache, sampler: Sampler
) -> Callable[[list[int]], dict[str, float]] | None:
    """With ``--by cgroup`` as root on cgroup v2: each leaf cgroup's CPU from its own
    ``cpu.stat`` (docs/exporter.md, "What each series covers"), not read for a cgroup
    whose events say none of its tasks ran (``CgroupCounts.idle``). Not without root: a
    cgroup's usage is every user's, more than an unprivileged exporter may show."""
    from tiptop.kernel.cgroup import CgroupCpu, unified_root

    root = unified_root(host.sysfs_root)
    if opts.series_by is not SeriesBy.CGROUP or host.euid != 0 or root is None:
        return None
    cpu = CgroupCpu(cgroups, root)

    def used(pids: list[int]) -> dict[str, float]:
        idle = {path for path, counts in sampler.cgroup_counts.items() if counts.idle}
        return cpu.used(pids, idle)

    return used


def _counts_by_label(sampler: Sampler) -> Callable[[list[int]], dict[str, CgroupCounts]]:
    """Each cgroup label's counts over the latest refresh, from its cgroups' events (read
    by the sampler with its tasks')."""
    from tiptop.kernel.cgroup import shorten

    labels: dict[str, str] = {}  # per path, never stale: a function of the path

    def by_label(_pids: list[int]) -> dict[str, CgroupCounts]:
        out: dict[str, CgroupCounts] = {}
        for path, counts in sampler.cgroup_counts.items():
            label = labels.get(path)
            if label is None:
                label = labels[path] = shorten(path)
            out[label] = out[label] + counts if label in out else counts
        return out

    return by_label


def run_serve(opts: Options, loaded: ScreenSet, host: Host, say: Callable[[str], None]) -> int:
    """Export until stopped: 0 after ``-n`` refreshes, 143 after SIGTERM and 130 after
    SIGINT (docs/tiptop.1), 1 when ``--textfile`` was never written."""
    from tiptop.exporter.aggregate import Aggregator, metrics_for
    from tiptop.exporter.httpd import client_limit
    from tiptop.exporter.serve import Exporter
    from tiptop.kernel.cgroup import CgroupCache
    from tiptop.sources.bycgroup import follow_rows

    address, textfile = _targets(opts, say)
    web = None
    if opts.web_config is not None:
        from tiptop.exporter.webconfig import load

        web = load(opts.web_config)
        for warning in web.warnings:
            say(warning)
    clients = client_limit(host.fd_soft) if address is not None else 0
    # The clients' fds (and the listening and epoll ones, and with passwords the socket pair
    # the checker threads wake the server with) counted as in use: the counters' fd budget
    # (Host.fd_budget) leaves them free, so clients never starve the sampler.
    server = (2 + 2 * (web is not None and web.auth is not None)) if clients else 0
    host = dataclasses.replace(host, fds_in_use=host.fds_in_use + clients + server)
    index, screen = pick_screen(loaded, opts.screen)
    if opts.screen is None:
        index, screen = fallback_screen(loaded, index, screen, say, host)
    check_privileges(opts, host)
    if host.euid != 0 and opts.uid not in (None, host.euid):
        say("an unprivileged exporter exports only its own user's tasks: -u ignored")
    # A dead task's final interval is counted once, never repeated: not sticky.
    opts = dataclasses.replace(opts, sticky=False, uid=host.euid if host.euid != 0 else opts.uid)
    cgroups = CgroupCache(host.proc_root)
    workload_of = None
    workloads = None
    if opts.series_by is SeriesBy.CGROUP:
        from tiptop.runtimes import Workloads, hierarchy_mount

        workloads = Workloads(hierarchy_mount(host.sysfs_root), opts.runtime_root)

        def workload_of(pid: int) -> Workload:
            assert workloads is not None
            return workloads.of(cgroups.path(pid))

    aggregator = Aggregator(
        metrics_for(screen.counters),
        by=opts.series_by,
        top=opts.plot_top,
        cmdline=opts.show_cmdline and opts.series_by is SeriesBy.PID,
        cgroup_of=cgroups.label,
        cgroup_moves=lambda: cgroups.moves,
        breakdown=bool(screen.breakdown),
        cpu_since_birth=lambda pid: cpu_since_birth(host, pid),
        expiry=opts.series_expiry,
        workload_of=workload_of,
    )
    sampler = make_sampler(opts, screen, host)
    from tiptop.cli.cgroups import cgroup_events, cgroup_walk

    walker = None if workloads is None else cgroup_walk(opts, host, sampler, workloads.of)
    source: FrameSource = sampler

    def forget_ended(frame: Frame) -> None:
        follow_rows(cgroups, frame)

    keep: Callable[[Frame], None] | None = forget_ended
    if walker is not None:  # rows of whole cgroups: no task is looked at
        source, keep = walker, None
    else:
        aggregator.cgroup_cpu = _cgroup_cpu(opts, host, cgroups, sampler)
        if cgroup_events(opts, host, sampler, cgroups.path) is not None:
            aggregator.cgroup_counts = _counts_by_label(sampler)
    exporter = Exporter(source, aggregator, opts.delay)
    # SIGTERM, SIGINT: a clean stop, and the exit status the man page gives (143, 130).
    ending = Ending(exporter.stop)
    try:
        with exporter.stop.on_signals(ending):
            if address is not None:
                url = exporter.serve(*address, max_clients=clients, web=web)
                sys.stderr.write(f"tiptop: serving {url}\n")
                sys.stderr.flush()
            exporter.run(textfile, opts.max_iter, keep=keep, report=say)
    finally:
        exporter.close()
        if walker is not None:
            walker.close()
        sampler.close()
        if textfile is not None:
            textfile.close()
    writer = exporter.writer
    if writer is not None and writer.tried and not writer.written:
        say(f"--textfile {writer.path}: never written ({writer.tried} tries)")
        return 1
    return ending.status()


__all__ = ["run_serve"]
