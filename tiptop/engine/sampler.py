"""One refresh: scan tasks, open/close counter groups, read, take deltas, evaluate columns.

CONTRACT (implemented by the counter-engine work; cli, batch and live depend on it):

``SamplerConfig``: dataclass with ``threads`` (-H), ``kernel`` (-K), ``only_pid``,
``only_name``, ``match_cmdline`` (-c), ``uid`` (-u, filters for real), ``collect``
(False for --no-collect), ``cpu_threshold`` (--cpu-min), ``sticky``.

``Sampler(screen, config, *, backend=None, proc_root="/proc", sysfs_root="/sys")``
    ``backend=None`` means the real kernel backend. Binding the screen's counters to this
    machine (``tiptop.events``) happens here; unavailable events are reported once in
    ``messages`` and their cells are ``Status.UNREADABLE``.
``Sampler.start() -> None``
    First scan: discover tasks, open counters, take baselines. Nothing is shown for it.
``Sampler.refresh() -> tiptop.frame.Frame``
    A frame covering the time since the previous ``start``/``refresh``.
``Sampler.reconfigure(screen=None, **config_changes) -> None``
    Switch screen or change config fields; counters are reopened as needed and the next
    ``refresh`` is a fresh start (iteration 0 again; call ``start`` implicitly).
``Sampler.attach_spawned(pid) -> None``
    Attach counters to a forked child that has not exec'd yet (enable_on_exec).
``Sampler.messages -> list[str]``
    Every distinct problem met so far, one line each (the error log).
``Sampler.close() -> None``
    Close every fd.

IMPLEMENTATION NOTES

*Process rows use inherit mode; thread rows (-H) use per-thread groups* (peers.md 4.5).
In process mode every thread that exists when a process is first seen gets one group per
PMU opened with ``inherit=1, inherit_thread=1``; threads created later are counted by the
kernel into their creator's group (and folded in when they exit: ``sync_child_event``),
never opened on their own, so nothing is counted twice, threads shorter than a refresh
are caught, and ``inherit_thread`` (Linux 5.13+) keeps forked child *processes* out of
the parent (they are rows of their own). Groups of attach-time threads that exit stay
open until the whole process ends: their final counts stay readable, so a process total
never goes down. On kernels that reject ``inherit_thread`` (EINVAL) it is dropped once
and said so. With -H each thread gets ``inherit=0`` groups, opened when /proc shows it
and closed when it is gone: exact per-thread rows.

*Modules.* Binding a screen (resolve, probe on ourselves, split groups too large for a PMU
into several multiplexed groups) is ``tiptop.engine.plan``; the counter plan, units and
batched reads are ``tiptop.engine.readout``; turning a readout into a ``Frame`` is
``tiptop.engine.evaluate``;
opening and closing groups (the fd budget, reclaim, retries, a spawned command's counters)
is ``tiptop.engine.attach``, a base class of :class:`Sampler`. This module keeps the refresh
cycle: scans, reads, dead and sticky rows.

*A spawned command (``attach_spawned``) counts its whole process tree* in process mode,
as ``perf stat -- cmd`` does: its groups inherit into child processes too (no
``inherit_thread``), and its row's %CPU sums the tree's times; its descendants get no rows
of their own (``tiptop.engine.attach``, ``TaskScanner.add_tree_root``).

*Refresh.* ``start()`` is the primer: tasks found then (and any task first seen by a later
refresh) get their groups opened and a baseline read, and are shown from the next refresh
on, which covers a full interval. An event is probed once, on ourselves, at bind time; an
event that fails there is reported once (``explain_open_error``) and never opened per
task. fds are budgeted (soft RLIMIT_NOFILE, raised to the hard limit, minus a reserve);
busy tasks are opened first; out of fds, idle tasks' groups are closed (unless
``collect=False``) and every task left without counters is retried at later refreshes.
The first ``refresh()`` after ``start()`` is iteration 0; a ``refresh()`` without
``start()`` (or after ``reconfigure``) starts, returns an empty frame, and the next one is
iteration 0. Dead tasks: their groups are read one last time and closed, and their row
shows that last interval with ``dead=True`` (its %CPU from the zombie's final times when
/proc still shows it, ``tiptop.engine.tasks``); with ``sticky`` that row is then repeated, frozen.

*Cells shown '?' although the task ran* (Δtime_enabled > 0, Δtime_running == 0) are the
kernel's true answer: the group never got the PMU's counters. The usual cause is another
monitor (perf, a second tiptop) holding groups on the same tasks, created earlier: a
task-context group that does not fit is rotated in only at the multiplexing tick while its
task is on the CPU, which a task running microseconds at a time almost never is (see
``_note_unscheduled``, which says so once per PMU). Failed reads keep what the group had
counted in the task's total; a task that is gone is never retried; counters attached to a
spawned child that /proc shows under another identity (or not at all) are closed.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from dataclasses import dataclass

import numpy as np

from tiptop.cells import Status
from tiptop.engine.attach import FD_RESERVE, GroupOpener, TaskState
from tiptop.engine.evaluate import assemble
from tiptop.engine.plan import Binder
from tiptop.engine.readout import Unit, read_units
from tiptop.engine.tasks import Scan, Task, TaskScanner
from tiptop.frame import Frame
from tiptop.kernel.backend import Backend
from tiptop.kernel.explain import is_privileged, raise_fd_limit, read_paranoid
from tiptop.screens.model import ScreenSpec


@dataclass
class SamplerConfig:
    """What to watch and how (see the module contract)."""

    threads: bool = False
    kernel: bool = False
    only_pid: int | None = None
    only_name: str | None = None
    match_cmdline: bool = False
    uid: int | None = None
    collect: bool = True
    cpu_threshold: float = 0.00001
    sticky: bool = False


class Sampler(GroupOpener):
    """Turns a screen into frames, one per :meth:`refresh` (see the module contract)."""

    def __init__(
        self,
        screen: ScreenSpec,
        config: SamplerConfig | None = None,
        *,
        backend: Backend | None = None,
        proc_root: str = "/proc",
        sysfs_root: str = "/sys",
    ) -> None:
        if backend is None:
            from tiptop.kernel.group import PerfBackend

            backend = PerfBackend()
        self.screen = screen
        self.config = config or SamplerConfig()
        self.proc_root = proc_root
        self.sysfs_root = sysfs_root
        self._backend = backend
        self.messages: list[str] = []
        self._fresh: list[str] = []
        self._said: set[object] = set()
        self._paranoid = read_paranoid()
        self._privileged = is_privileged()
        soft, _ = raise_fd_limit()
        try:
            in_use = len(os.listdir("/proc/self/fd"))
        except OSError:
            in_use = 16
        self.fd_budget = max(soft - in_use - FD_RESERVE, 0)
        self.fds_used = 0
        self._inherit_thread = True
        self._spawned: dict[int, tuple[int, list[Unit]]] = {}
        self._trees: dict[int, int] = {}
        self._dead = Frame.empty()
        self._bind()
        self._reset()

    # ------------------------------------------------------------------ messages
    def note(self, line: str) -> None:
        """Add a problem found outside the sampler (a configuration file's) to the log."""
        self._say(line)

    def _say(self, line: str, key: object = None) -> None:
        """Record a problem once (per ``key`` when given, else per text)."""
        key = line if key is None else key
        if key not in self._said:
            self._said.add(key)
            self.messages.append(line)
            self._fresh.append(line)

    # ------------------------------------------------------------------ binding
    def _bind(self) -> None:
        """Bind the screen here (``tiptop.engine.plan``): plan, columns, kernel/inherit flags."""
        self._binder = Binder(
            self._backend, threads=self.config.threads, kernel=self.config.kernel,
            sysfs_root=self.sysfs_root, paranoid=self._paranoid, privileged=self._privileged,
            say=self._say, inherit_thread=self._inherit_thread,
        )  # fmt: skip
        bound = self._binder.bind(self.screen)
        self.plan = bound.plan
        self._columns = bound.columns
        self._col_aliases = bound.col_aliases
        self._kernel = bound.kernel
        self._inherit_thread = bound.inherit_thread

    def _reset(self) -> None:
        cfg = self.config
        self._scanner = TaskScanner(
            self.proc_root, threads=cfg.threads, uid=cfg.uid, only_pid=cfg.only_pid,
            only_name=cfg.only_name, match_cmdline=cfg.match_cmdline,
        )  # fmt: skip
        for pid, starttime in self._trees.items():  # spawned commands' process trees
            self._scanner.add_tree_root(pid, starttime)
        self._started = False
        self._iteration = 0
        self._pending: dict[int, Task] = {}
        self._tasks: list[Task] = []
        self._tasks_total = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """The primer scan: discover tasks, open their counters, take baselines."""
        self._started = True
        self._iteration = 0
        scan = self._scanner.scan()
        self._tasks = scan.tasks
        self._tasks_total = scan.threads_total
        self._open_new(scan)

    def refresh(self) -> Frame:
        """A frame covering the time since the previous start/refresh."""
        headers = tuple(c.header for c in self.screen.columns)
        if not self._started:
            self.start()
            frame = Frame.empty(headers, self.plan.aliases, threads=self.config.threads)
            frame.tasks_total = self._tasks_total
            frame.messages, self._fresh = self._fresh, []
            return frame
        scan = self._scanner.scan()
        # Tasks gone since the last scan are read one last time and shown in this frame,
        # dead (the original reads a zombie's counters once more and removes dead tasks
        # after the iteration is shown: tiptop-original.md 9.5); only ``sticky`` keeps
        # them afterwards, frozen.
        dying = scan.gone
        for t in dying:
            self._pending.pop(id(t), None)
        shown = [t for t in scan.tasks if not t.new]
        reaped = np.array([False] * len(shown) + [not t.final for t in dying], bool)
        frame = self._evaluate(shown + dying, scan, headers, reaped)
        self._note_unscheduled(frame)
        frame.dead[len(shown) :] = True
        for t in dying:
            self._close_task(t)
        if self.config.sticky:
            if dying:
                self._dead = self._dead.concat(frame.take(slice(len(shown), None)))
            if len(self._dead):
                frame = frame.take(slice(0, len(shown))).concat(self._dead)
        self._tasks = scan.tasks
        self._open_new(scan)
        frame.messages = self._fresh
        self._fresh = []
        self._iteration += 1
        return frame

    def reconfigure(self, screen: ScreenSpec | None = None, **config_changes: object) -> None:
        """Switch screen or config; everything is reopened at the next refresh."""
        self.close()
        if screen is not None:
            self.screen = screen
        self.config = dataclasses.replace(self.config, **config_changes)  # type: ignore[arg-type]
        self._dead = Frame.empty()
        self._bind()
        self._reset()

    def close(self) -> None:
        """Close every fd."""
        for t in self._tasks:
            self._close_task(t)
        for _, units in self._spawned.values():
            for u in units:
                u.close()
        self._spawned.clear()
        self._tasks = []
        self.fds_used = 0

    # ------------------------------------------------------------------ diagnosis
    def _note_unscheduled(self, frame: Frame) -> None:
        """Say once per PMU that some of its groups were enabled but never scheduled.

        A group that cannot get the PMU's counters (perf_event_open(2), "time_enabled ...
        time_running") is rotated in only by the multiplexing timer, which rotates the
        context of the task on the CPU at the tick (kernel/events/core.c,
        ``perf_rotate_context``, every ``perf_event_mux_interval_ms``): a task that runs
        for microseconds at a time (kernel threads, daemons) is almost never on the CPU
        then, so the groups created later than another monitor's never run for it and its
        cells are ``?`` for as long as the other monitor (perf, a second tiptop) holds its
        groups. Measured here on a 6-counter AMD PMU: two samplers of the default screen
        (4 hardware events each) on the same tasks; the later one sees Δrunning == 0 for
        ~10 kernel threads per interval, and for none once the first closes."""
        nc = (frame.counter_status == Status.NOT_COUNTED).any(axis=0)
        if not nc.any():
            return
        per_pmu: dict[str, int] = {}
        for g in self.plan.groups:
            per_pmu[g.pmu] = per_pmu.get(g.pmu, 0) + 1
        for g in self.plan.groups:
            if nc[g.alias_index].any():
                own = " or by tiptop's own split groups" if per_pmu[g.pmu] > 1 else ""
                self._say(
                    f"counters of PMU {g.pmu or '?'} never ran for some tasks while they ran "
                    f"(its counters were all taken: by another perf user such as perf or a "
                    f"second tiptop{own}); those cells show '?'",
                    key=("unscheduled", g.pmu),
                )

    # ------------------------------------------------------------------ evaluation
    def _evaluate(
        self,
        rows: list[Task],
        scan: Scan,
        headers: tuple[str, ...],
        reaped: np.ndarray | None = None,
    ) -> Frame:
        plan = self.plan
        states = [t.data if isinstance(t.data, TaskState) else TaskState() for t in rows]
        readout, failed = read_units(plan, [s.units for s in states])
        for i, u, e in failed:
            st = states[i]
            # What the group counted until its last good read stays in the task's total.
            st.retire(plan, [u])
            st.units.remove(u)
            self.fds_used -= u.group.n_fds
            u.close()
            if e.errno != errno.ESRCH and not st.units:
                # ECHILD (6.6+: inherited group layout changed) and the like: reopen later.
                self._wait(
                    rows[i],
                    f"reading counters failed ({errno.errorcode.get(e.errno or 0, e.errno)}): "
                    "reopening them",
                )
        retired = [s.retired for s in states]
        return assemble(
            rows, plan, readout, retired, self._columns, self._col_aliases,
            iteration=self._iteration, interval=scan.interval, threads=self.config.threads,
            headers=headers, tasks_total=scan.threads_total, reaped=reaped,
        )  # fmt: skip


__all__ = ["Sampler", "SamplerConfig"]
