"""Monitoring proper: open the outputs, spawn the ``--`` command, build the sampler and
hand over to live mode or the batch loop; everything opened here is closed here."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from tiptop.choices import SeriesBy
from tiptop.cli.screens import ScreenSet, export_current, fallback_screen, pick_screen
from tiptop.errors import TiptopError
from tiptop.host import Host
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.engine.sampler import Sampler
    from tiptop.frame import FrameSource
    from tiptop.messages import MessageLog
    from tiptop.screens.model import ScreenSpec
    from tiptop.spawn import Spawned
    from tiptop.where import TaskProfiler


def open_output(path: str | None, what: str) -> IO[str] | None:
    """``-o``/``-E``: the file opened for writing, or None; one line when it cannot be.
    Bytes of a non-UTF-8 value are written back as they were (surrogateescape)."""
    if path is None:
        return None
    try:
        return open(path, "w", errors="surrogateescape")
    except OSError as exc:
        raise TiptopError(f"{what}: cannot open '{path}': {exc.strerror}") from None


def check_privileges(opts: Options, host: Host) -> None:
    """``-K`` without the right to count kernel events is an error, as in the original."""
    refusal = host.kernel_refusal()
    if opts.show_kernel and refusal is not None:
        raise TiptopError(refusal)


def read_pid_max(path: str = "/proc/sys/kernel/pid_max") -> int:
    """The kernel's ``pid_max`` (proc(5)); 32768, the historical default, when unreadable."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 32768


def other_users_pid(opts: Options, host: Host) -> str | None:
    """``-p PID`` of a process of another user, without root: one line saying that only
    one's own processes are shown (the rule of ``Host.may_watch``), else None; without it
    ``tiptop -b -p 1`` printed no rows and no reason."""
    from tiptop.kernel.procfs import read_facts

    if opts.only_pid is None or host.root:
        return None
    try:
        uid = read_facts(host.proc_root, opts.only_pid, "").uid
    except (TiptopError, OSError):  # gone, or its status unreadable: nothing to say
        return None
    if host.may_watch(uid):
        return None
    return (
        f"-p {opts.only_pid}: that process belongs to another user; "
        "without root only your own processes are shown"
    )


#: Blocks below this size come from malloc's heap, and up to twice it of freed memory
#: stays there (``tiptop.kernel.keep_heap``).
HEAP_KEPT = 16 << 20


def make_sampler(
    opts: Options,
    screen: ScreenSpec,
    host: Host,
    problems: Sequence[str] = (),
    notices: Sequence[str] = (),
) -> Sampler:
    """The one place a ``Sampler`` (the live frame source) is built from the options;
    ``problems`` (configuration warnings) and ``notices`` (what start-up had to say) start
    its message log, so that ``-E``, batch's stderr and the ``e`` window all get them."""
    from tiptop.engine.sampler import Sampler
    from tiptop.kernel import keep_heap
    from tiptop.kernel.explain import NO_PMU, NO_PMU_KEY, NO_PMU_SHORT
    from tiptop.messages import MessageLog

    # Each refresh makes numpy arrays of every row: with thousands of tasks, over the
    # 128 KiB above which malloc would map and unmap each one (mallopt(3),
    # M_MMAP_THRESHOLD), every page of it faulting afresh.
    keep_heap(HEAP_KEPT)
    log = MessageLog()
    for line in problems:
        log.say(f"config:{line}", line)
    for line in notices:
        # What this machine or run is: news, not errors (the live [errors] stays off).
        if line.startswith(NO_PMU_SHORT):  # the fallback's no-PMU line: said once a run
            log.say(NO_PMU_KEY, line, detail=NO_PMU, notice=True)
        else:
            log.say(f"start:{line}", line, notice=True)
    return Sampler(screen, opts.sampler_config(), host=host, messages=log)


def run_monitor(
    opts: Options,
    loaded: ScreenSet,
    host: Host,
    problems: Sequence[str] = (),
) -> int:
    """Start sampling and hand over to live mode or the batch loop. ``problems``
    (configuration warnings not printed yet, in live mode) go to the live error log and a
    notice on the message line; start-up notices (the fallback to ``sched``, ``-p`` of
    another user's process) start the message log: batch's stderr or ``-E``, live's
    message line, ``e`` window and ``-E``."""
    opts, index, screen = _chosen_screen(opts, loaded, host)
    # Files first: a bad -o or -E is the one line the user sees, before any screen notice.
    out = open_output(opts.output, "-o")
    errf = open_output(opts.error_file, "-E")
    live = opts.live
    # In live mode the terminal is about to be taken over: notices go on its message line;
    # in both modes they start the message log (stderr or -E, the e window).
    notices: list[str] = []
    said: list[str] = []
    if problems:
        n = len(problems)
        notices.append(f"{n} problem{'s' if n > 1 else ''} in the configuration ('e' lists them)")
    if opts.screen is None and opts.why is None:
        index, screen = fallback_screen(loaded, index, screen, said.append, host)
    hint = other_users_pid(opts, host)
    said += [hint] if hint else []
    notices += said
    child = None
    if opts.command:
        from tiptop import spawn

        child = spawn.fork_blocked(list(opts.command))
        opts = dataclasses.replace(opts, only_pid=child.pid, only_name=None, show_idle=True)
    sampler = None
    try:
        sampler = _frame_source(opts, screen, index, host, problems, said, live, loaded)
        if child is not None:
            why = spawn.changes_credentials(list(opts.command), host.euid, os.getegid())
            sampler.attach_spawned(child.pid, why)
            sampler.start()
            child.release()
        _settled()
        if live:
            return _run_live(opts, sampler, loaded, index, host, child, errf, notices)
        return _run_batch(opts, sampler, screen, index, child, out, errf)
    finally:
        if child is not None and child.status is None and not child.exited():
            child.kill()
        if sampler is not None:
            sampler.close()
        _close_outputs(out, errf)


def _chosen_screen(opts: Options, loaded: ScreenSet, host: Host) -> tuple[Options, int, ScreenSpec]:
    """The options with what the run derives from the host (PID width, target, the
    configuration file read), and the screen asked for (``-S``, ``--why``), checked; raises
    for privileges ``-K`` lacks and for a ``-p`` that does not exist."""
    from tiptop import table
    from tiptop.screens.printf import check_formats

    index, screen = pick_screen(loaded, opts.screen)
    if opts.why is not None:
        from tiptop.cli.why import why_setup

        opts, index, screen = why_setup(opts, loaded, host, index, screen)
    check_formats(screen)
    opts = dataclasses.replace(
        opts,
        pid_width=table.pid_width_for(read_pid_max()),
        target=loaded.target,
        config_path=loaded.path,
    )
    check_privileges(opts, host)
    if opts.only_pid is not None and not os.path.exists(f"{host.proc_root}/{opts.only_pid}"):
        raise TiptopError(f"-p {opts.only_pid}: no such process")
    return opts, index, screen


def _settled() -> None:
    """What start-up made (modules, screens, the plan) lives as long as the run: moved out of
    the collector's reach (``gc.freeze``, the gc module's documentation), so that no later
    collection traverses it again, nor the interpreter's at exit. Those exit collections
    were the larger part of what a short run paid to end (benchmarks/README.md,
    "Start-up"); each object is still freed by its reference count."""
    gc.freeze()


def _frame_source(
    opts: Options,
    screen: ScreenSpec,
    index: int,
    host: Host,
    problems: Sequence[str],
    said: list[str],
    live: bool,
    loaded: ScreenSet,
) -> FrameSource:
    """The sampler, wrapped by the recorder (``--record``, which numbers the screens as
    ``loaded`` does) and by the cgroup rows (live, or ``--by cgroup``), in that order: a
    recording holds the task rows, and then who runs in each one's cgroup, so that its
    replay shows rows by cgroup too."""
    sampler = make_sampler(opts, screen, host, problems, said)
    source: FrameSource = sampler
    membership = None
    if live or opts.series_by is SeriesBy.CGROUP:  # rows by cgroup: --by cgroup, the live G key
        from tiptop.runtimes import Workloads, hierarchy_mount
        from tiptop.sources.bycgroup import Membership

        workloads = Workloads(hierarchy_mount(host.sysfs_root), opts.runtime_root)
        membership = Membership(host.proc_root, workloads)
    with contextlib.ExitStack() as on_error:  # a --record file that cannot be opened
        on_error.callback(source.close)
        if opts.record:
            from tiptop.cli.record import record_source

            source = record_source(opts, opts.record, source, index, loaded.screens, membership)
        if membership is not None:
            from tiptop.cli.cgroups import cgroup_events
            from tiptop.sources.bycgroup import CgroupSource

            if cgroup_events(opts, host, sampler, membership.cgroups.path) is not None:
                membership.counting = lambda: sampler.cgroup_counts
            source = CgroupSource(source, opts.series_by is SeriesBy.CGROUP, membership)
        on_error.pop_all()
    return source


def _close_outputs(*files: IO[str] | None) -> None:
    """Close ``-o`` and ``-E``; a write that fails on close (a full disk) is one line."""
    for f in files:
        if f is not None:
            try:
                f.close()
            except OSError as exc:
                raise TiptopError(f"cannot write output: {exc.strerror}") from None


def _run_live(
    opts: Options,
    sampler: FrameSource,
    loaded: ScreenSet,
    index: int,
    host: Host,
    child: Spawned | None,
    errf: IO[str] | None,
    notices: list[str],
) -> int:
    """Live mode until ``q``, Ctrl-C or ``-n``; with a spawned command that ended first,
    its exit status, as in batch."""
    from tiptop import live as live_mode
    from tiptop.live.services import Services

    services = Services(
        host=host,
        exporter=export_current,
        screen_index=index,
        started=child is not None,
        error_log=errf,
        message="; ".join(notices),
        child=child,
        drill=lambda settings, pid, screen: drill_source(settings, host, pid, screen),
        where=lambda pid, node, delay: where_profiler(host, pid, delay, node, sampler.messages),
        where_event=where_event_line(host),
    )
    code = live_mode.run(opts, sampler, loaded.screens, services)
    if child is not None and code == 0 and child.exited():
        return child.reap()
    return code  # 130 after Ctrl-C; a command still running is ended by the caller


def _run_batch(
    opts: Options,
    sampler: FrameSource,
    screen: ScreenSpec,
    index: int,
    child: Spawned | None,
    out: IO[str] | None,
    errf: IO[str] | None,
) -> int:
    """The batch loop, SIGTERM and SIGINT ending it cleanly (status 143, 130); the
    spawned command's exit status when there is one, which gets a SIGTERM passed on and
    ends tiptop with it unless it takes longer than a second signal or 5 s
    (``tiptop.cli.ending``)."""
    from tiptop.cli.ending import Ending, wait_for_command
    from tiptop.outputs import batch
    from tiptop.refresh import Stop

    stop = Stop()
    ending = Ending(stop)
    try:
        with stop.on_signals(ending):
            batch.run(
                opts,
                sampler,
                screen,
                index,
                out or sys.stdout,
                errf or sys.stderr,
                started=child is not None,
                stop=stop,
                child=child,
            )
            if child is not None and stop.requested and not child.exited():
                os.kill(child.pid, signal.SIGTERM)  # pass the request on to the command
                status = wait_for_command(child, ending)  # a second signal or 5 s: no more
                if status is None:
                    child.abandon()
                    return ending.status()
    finally:
        stop.close()
    return child.reap() if child is not None else ending.status()


def where_profiler(
    host: Host, pid: int, delay: float, node: str | None, messages: MessageLog | None = None
) -> TaskProfiler:
    """The live ``f`` window's profiler of process ``pid`` (``tiptop.live.where``), its
    buffers sized for the live ``delay`` of the moment (the window opens it again when
    ``d`` changes it): where a hardware PMU exists it samples the event of the task's
    bottleneck ``node`` (``tiptop.where.event_for``), else ``cpu-clock``. What it skips (a
    file the process planted, and why) is said in ``messages``, the live session's log."""
    from tiptop.events.sysfs import core_pmus
    from tiptop.where import CPU_CLOCK, TaskProfiler, event_for

    event = event_for(node) if core_pmus(host.sysfs_root) else CPU_CLOCK
    return TaskProfiler(pid, host, delay, messages, event=event)


def where_event_line(host: Host) -> str:
    """The ``f`` window's first line without a hardware PMU (it samples ``cpu-clock``);
    empty with one: the window then names the event its task's bottleneck chose."""
    from tiptop.events.sysfs import core_pmus
    from tiptop.where import EVENT, RATE_HZ

    if not core_pmus(host.sysfs_root):
        return f"no hardware PMU here: sampling {EVENT} (time on CPU) at {RATE_HZ} Hz"
    return ""


def drill_source(opts: Options, host: Host, pid: int, screen: ScreenSpec) -> Sampler:
    """The live ``t`` window's extra source: ``screen`` (a deeper top-down level) counted
    on process ``pid`` alone, as ``-p PID`` would, with the live session's settings
    ``opts`` (a ``K`` toggled live counts kernel mode there too; tiptop/live/drill.py)."""
    one = dataclasses.replace(
        opts, only_pid=pid, only_name=None, show_threads=False, uid=None, sticky=False
    )
    return make_sampler(one, screen, host)
