"""The sampler: one refresh as a straight sequence of the engine's parts; a ``FrameSource``.

One refresh (``docs/architecture.md`` draws it):

1. ``Attacher.read(known)`` (``engine.count.attach`` over ``engine.count.readout``): one group read
   per task of the last scan and PMU, deltas and scaling, all rows at once; tasks whose
   groups were enabled for no time did not run;
2. ``TaskScanner.scan(activity)`` (``engine.scan.tasks``): which tasks exist, their facts and
   %CPU, without reading ``/proc/PID/stat`` again for the tasks that did not run
   (``engine.activity``: what the counters said, handed over in one record);
3. ``evaluate(...)`` (``engine.assemble``): the readout and task facts become a finished
   ``Frame`` (columns evaluated, statuses, dead rows marked);
4. ``Attacher.detach(gone)`` then ``Attacher.attach(scan)``: groups of tasks that ended are
   closed, new tasks get theirs (busy first, within the fd budget) for the next refresh.

The counter plan (``engine.count.plan``) is made once per screen, at construction and at
``reconfigure``: each event is resolved, probed once on ourselves and packed into groups
that fit the PMU. Every problem goes to the one message log (``tiptop.messages``).

*Refresh.* ``start()`` is the primer: tasks found then (and any task first seen by a later
refresh) get their groups opened and a baseline read, and are shown from the next refresh
on, which covers a full interval. The first ``refresh()`` after ``start()`` is iteration 0;
a ``refresh()`` without ``start()`` (or after ``reconfigure``) starts, returns an empty
frame, and the next one is iteration 0. A task that ends is read one last time and its row
shows that last interval, dead (its %CPU from the zombie's final times when /proc still
shows it, ``engine.scan.tasks``); with ``sticky`` that row is then repeated, frozen.

*Cells shown '?' although the task ran* (Δtime_enabled > 0, Δtime_running == 0) are the
kernel's true answer: the group never got the PMU's counters, usually because another
monitor (perf, a second tiptop) holds groups on the same tasks (``_note_unscheduled``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tiptop.cells import Code
from tiptop.engine.activity import Activity
from tiptop.engine.assemble import assemble, labels_of
from tiptop.engine.count.attach import Attacher, Counts
from tiptop.engine.count.plan import Planner, ScreenPlan
from tiptop.engine.count.readout import CounterPlan
from tiptop.engine.scan.task import same_tasks
from tiptop.engine.scan.tasks import Scan, Task, TaskScanner
from tiptop.frame import CgroupCounts, Frame, FrameSource, SamplerConfig
from tiptop.host import Host
from tiptop.kernel.backend import Backend
from tiptop.kernel.procfs import clocks_readable
from tiptop.messages import MessageLog
from tiptop.screens.frames import RowLabels
from tiptop.screens.model import ScreenSpec

if TYPE_CHECKING:
    from tiptop.engine.count.cgroups import CgroupCounters
    from tiptop.engine.scan.times import TimeReader

#: Idle tasks are still looked at once every SWEEP refreshes (see ``refresh``): their
#: ``schedstat``, and their ``stat`` when they ran (``engine.scan.task.slept``).
SWEEP = 16


def counters_ended(scan: Scan, activity: Activity) -> list[Task]:
    """The tasks of ``scan`` read afresh whose CPU time moved since their last look while
    their counters said they did not run (``activity``): counters that ended under a
    running task. A set-user-ID exec ends them (fs/exec.c ``begin_new_exec()``); an exec by
    a thread other than the leader leaves the leader's row on the old leader's, which
    exited (``de_thread()``: the exec'ing thread takes the leader's PID). The sweep finds
    them (``engine.activity``); tasks without counters are not among them."""
    still, blind = activity.did_not_run, activity.uncounted
    return [t for t in scan.looked if t.cpu_total > 0 and t.tid in still and t.tid not in blind]


class Sampler(FrameSource):
    """Turns a screen into frames, one per :meth:`refresh` (a ``FrameSource``).

    ``host`` (default: this machine, ``Host.read()``) says what may be counted;
    ``backend`` (default: the kernel's) opens the groups; problems go to ``messages``.
    """

    def __init__(
        self,
        screen: ScreenSpec,
        config: SamplerConfig | None = None,
        *,
        host: Host | None = None,
        backend: Backend | None = None,
        messages: MessageLog | None = None,
    ) -> None:
        if backend is None:
            from tiptop.kernel.group import PerfBackend

            backend = PerfBackend()
        self.screen = screen
        self.config = config or SamplerConfig()
        self.host = host or Host.read()
        self.messages = messages if messages is not None else MessageLog()
        self._backend = backend
        self._fd_budget = self.host.fd_budget
        self._inherit_thread = True
        self._trees: dict[int, int] = {}
        #: Spawned commands whose counters stop at their exec (``attach_spawned``).
        self._uncountable: set[int] = set()
        self._dead = Frame.empty()
        #: Tasks counted whole with their cgroup (:meth:`count_cgroups`).
        self._elsewhere: Callable[[Task], bool] | None = None
        self._cgroups: tuple[CgroupCounters, Callable[[int], str]] | None = None
        #: The counts of the cgroups counted whole, read with the latest refresh's.
        self.cgroup_counts: dict[str, CgroupCounts] = {}
        self._plan_screen()
        self._reset()

    _attacher: Attacher  # set by _plan_screen, first from __init__

    def _run_clocks(self) -> bool:
        """Whether a process's CPU-time clock says that its groups counted nothing
        (``engine.count.counters.RunClocks``): its PIDs are the ones system calls take
        (this PID namespace's ``/proc``), its groups are on its own threads (``-H``,
        or ``inherit_thread`` for process rows; a spawned tree's are told apart per row),
        and no CPU runs without the scheduler's tick, which would leave a running task's
        time off its clock for up to a second (``Host.tickless``)."""
        own = self.config.threads or self._inherit_thread
        return own and not self.host.tickless and clocks_readable(self.host.proc_root)

    # ------------------------------------------------------------------ parts
    def _plan_screen(self) -> None:
        """Plan the screen here (``engine.count.plan``) and hold a new attacher for it (the fd
        budget, once shrunk by EMFILE, carries over)."""
        if hasattr(self, "_attacher"):
            self._fd_budget = self._attacher.fd_budget
        planner = Planner(
            self._backend,
            self.host,
            self.messages,
            threads=self.config.threads,
            kernel=self.config.kernel,
            inherit_thread=self._inherit_thread,
        )
        self._screen_plan: ScreenPlan = planner.plan(self.screen)
        self._inherit_thread = self._screen_plan.inherit_thread
        cfg = self.config
        self._attacher = Attacher(
            self._backend,
            self.plan,
            self.messages,
            planner.explain,
            proc_root=self.host.proc_root,
            fd_budget=self._fd_budget,
            threads=cfg.threads,
            collect=cfg.collect,
            cpu_threshold=cfg.cpu_threshold,
            clock=self.host.clock.monotonic,
            run_clocks=self._run_clocks(),
        )
        self._attacher.trees.update(self._trees)
        self._attacher.elsewhere = self._elsewhere

    def _reset(self) -> None:
        cfg = self.config
        self._scanner = TaskScanner(
            self.host.proc_root,
            threads=cfg.threads,
            uid=cfg.uid,
            only_pid=cfg.only_pid,
            only_name=cfg.only_name,
            match_cmdline=cfg.match_cmdline,
            euid=self.host.euid,
            clock=self.host.clock.monotonic,
        )
        for pid, starttime in self._trees.items():  # spawned commands' process trees
            self._scanner.add_tree_root(pid, starttime)
        #: Where the rows' time went, read when the screen needs it (``engine.scan.times``).
        self._times: TimeReader | None = None
        if self._screen_plan.evaluator.reads_time:
            # Imported here: its module and the cgroup reads it brings are a part of every
            # start that a screen without a time column need not pay (benchmarks/README.md).
            from tiptop.engine.scan.times import TimeReader

            self._times = TimeReader(self.host, cfg.threads, self.host.clock.monotonic)
        self._started = False
        self._iteration = 0
        self._tasks_total = 0
        #: (rows, scanner renames, their labels) of the last frame (``_row_labels``).
        self._labels: tuple[list[Task], int, RowLabels] | None = None
        self._said_multiplexed = False

    @property
    def plan(self) -> CounterPlan:
        """The counters opened on each task for the current screen."""
        return self._screen_plan.plan

    @property
    def fds_used(self) -> int:
        """File descriptors the counters hold now."""
        return self._attacher.fds_used

    @property
    def fd_budget(self) -> int:
        """File descriptors the counters may hold."""
        return self._attacher.fd_budget

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """The primer scan: discover tasks, open their counters, take baselines."""
        self._started = True
        self._iteration = 0
        scan = self._scanner.scan()
        self._tasks_total = scan.threads_total
        if self._times is not None:
            self._times.begin(scan.tasks)
            self._times.context(0.0)
        self._attacher.attach(scan, self._scanner.tree)

    def refresh(self) -> Frame:
        """A frame covering the time since the previous start/refresh."""
        if not self._started:
            self.start()
            frame = Frame.empty(self._headers(), self.plan.aliases, threads=self.config.threads)
            frame.tasks_total = self._tasks_total
            return frame
        known = self._scanner.tasks
        counts = self._attacher.read(known)
        # A rotating 1/SWEEP of the tasks that did not run is looked at anyway, so nothing
        # the counters cannot see (counters ended by a setuid exec) stays hidden for long.
        turn = self._iteration % SWEEP
        activity = counts.activity(SWEEP, turn)
        if self._cgroups is not None:
            activity = self._read_cgroups(activity, known, turn)
        scan = self._scanner.scan(activity)
        ended = counters_ended(scan, activity)
        frame = self._evaluate(scan, known, counts, ended)
        self._note_unscheduled(frame)
        self._note_multiplexed(frame)
        if self._times is not None:
            self._times.forget(scan.gone)
        self._attacher.detach(scan.gone)
        self._attacher.reopen(ended)
        self._attacher.attach(scan, self._scanner.tree)
        self._iteration += 1
        return self._with_sticky(frame, len(scan.gone))

    def attach_spawned(self, pid: int, stops_at_exec: str | None = None) -> None:
        """Attach counters to a forked child that has not exec'd yet (``enable_on_exec``);
        in process mode its row counts its whole process tree (docs/architecture.md).
        ``stops_at_exec`` says why its counters will count nothing after its exec (a
        set-user-ID program, ``spawn.changes_credentials``): its counter cells are then
        ``?``, not zeros shown as valid, and the reason is said once."""
        if stops_at_exec is not None:
            self._uncountable.add(pid)
            self.messages.say("stops-at-exec", stops_at_exec, subject=self.plan.aliases)
        starttime = self._attacher.attach_spawned(pid)
        if starttime is not None and not self.config.threads:
            self._trees[pid] = starttime
            self._scanner.add_tree_root(pid, starttime)

    def count_cgroups(self, counters: CgroupCounters, path_of: Callable[[int], str]) -> None:
        """Count the leaf cgroups ``counters`` covers whole (``engine.count.cgroups``): their
        tasks (``path_of``: a process's cgroup path) get no counters of their own from the
        next new task on, and each refresh reads the cgroups' counts with the tasks'
        (:attr:`cgroup_counts`). Owned here from now: closed with the sampler, and
        dropped at :meth:`reconfigure` (they count the old screen's events)."""
        self._cgroups = (counters, path_of)
        self._elsewhere = lambda task: counters.covers(path_of(task.pid))
        self._attacher.elsewhere = self._elsewhere

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """Switch screen or config (None: as it was); everything is reopened at the next
        refresh."""
        self.close()
        if screen is not None:
            self.screen = screen
        if config is not None:
            self.config = config
        self._dead = Frame.empty()
        self._drop_cgroups()
        self._plan_screen()
        self._reset()

    def close(self) -> None:
        """Close every fd."""
        self._attacher.close()
        if self._cgroups is not None:
            self._cgroups[0].close()

    def _drop_cgroups(self) -> None:
        """Count every task itself again (a new screen: the cgroups' events were the old
        one's; ``close`` closed them)."""
        self._cgroups, self._elsewhere, self.cgroup_counts = None, None, {}

    # ------------------------------------------------------------------ steps
    def _headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.screen.columns)

    def _evaluate(
        self, scan: Scan, known: list[Task], counts: Counts, ended: Sequence[Task] = ()
    ) -> Frame:
        """Evaluate the rows shown now into a frame; ``counts`` were read for ``known``,
        the tasks of the previous scan, of which the shown and gone rows are a part; the
        counters of ``ended`` (:func:`counters_ended`) counted nothing of their interval.

        Tasks gone since the last scan are read one last time and shown in this frame,
        dead (the original reads a zombie's counters once more and removes dead tasks
        after the iteration is shown: docs/original.md section 7.3); only ``sticky`` keeps them
        afterwards, frozen."""
        # The new tasks are shown from the next refresh (their first interval is unknown).
        shown: list[Task] = [t for t in scan.tasks if not t.new] if scan.new else scan.tasks
        rows = shown + scan.gone
        # Most refreshes show the tasks read, in the same order: nothing to take then.
        if not same_tasks(rows, known):
            where = {id(t): i for i, t in enumerate(known)}
            counts = counts.take([where[id(t)] for t in rows])
        if self._uncountable or ended:  # counters that ended at an exec: '?', not zeros
            blind = {id(t) for t in ended}
            for i, t in enumerate(rows):
                if t.pid in self._uncountable or id(t) in blind:
                    counts.readout.nread[i, :] = 0
        reaped = np.zeros(len(rows), bool)
        reaped[len(shown) :] = [not t.final for t in scan.gone]
        time, context = None, None
        if self._times is not None:
            self._times.begin(scan.new)
            time = self._times.read(rows, scan.interval, scan.looked, scan.queued, len(shown))
            context = self._times.context(scan.interval)
        sp = self._screen_plan
        return assemble(
            rows,
            self.plan,
            counts.readout,
            counts.retired,
            sp.evaluator,
            iteration=self._iteration,
            timestamp=self.host.clock.wall(),
            interval=scan.interval,
            window=counts.window,
            threads=self.config.threads,
            tasks_total=scan.threads_total,
            reaped=reaped,
            dead=np.arange(len(rows)) >= len(shown),
            labels=self._row_labels(rows),
            time=time,
            context=context,
        )

    def _read_cgroups(self, activity: Activity, known: list[Task], turn: int) -> Activity:
        """Read the cgroups counted whole (:attr:`cgroup_counts`); the tasks of those that
        did not run did not either (``engine.count.cgroups``): to the activity's tasks
        that did not run, with the same sweep (``engine.activity``). The tasks of a cgroup
        no longer counted whole get counters of their own at this refresh's attach."""
        assert self._cgroups is not None
        counters, path_of = self._cgroups
        self.cgroup_counts = read = counters.read()
        if counters.split:  # cgroups that gained children: their tasks count themselves
            split = set(counters.split)
            self._attacher.count_own([t for t in known if path_of(t.pid) in split])
        idle = {path for path, c in read.items() if c.idle}
        if not idle:
            return activity
        uncounted = activity.uncounted
        still = {t.tid for t in known if t.tid in uncounted and path_of(t.pid) in idle}
        if not still:
            return activity
        return Activity(
            did_not_run=activity.did_not_run | still,
            not_due=activity.not_due | {tid for tid in still if tid % SWEEP != turn},
            uncounted=uncounted - still,
            exited=activity.exited,
            marks=activity.marks,
        )

    def _row_labels(self, rows: list[Task]) -> RowLabels:
        """The rows' labels, kept from the last refresh while the rows are the same
        ``Task`` objects in the same order and the scanner renamed none."""
        kept, renames = self._labels, self._scanner.renames
        if kept is None or kept[1] != renames or not same_tasks(rows, kept[0]):
            kept = self._labels = (rows, renames, labels_of(rows))
        return kept[2]

    def _with_sticky(self, frame: Frame, n_dying: int) -> Frame:
        """With ``sticky``, dead rows stay, frozen, after the live ones (a new frame)."""
        if not self.config.sticky:
            return frame
        live = len(frame) - n_dying
        if n_dying:
            self._dead = self._dead.concat(frame.take(slice(live, None)))
        if len(self._dead):
            return frame.take(slice(0, live)).concat(self._dead)
        return frame

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
        nc = (frame.counter_status == Code.NOT_COUNTED).any(axis=0)
        if not nc.any():
            return
        per_pmu: dict[str, int] = {}
        for g in self.plan.groups:
            per_pmu[g.pmu] = per_pmu.get(g.pmu, 0) + 1
        for g in self.plan.groups:
            if nc[g.alias_index].any():
                own = " or by tiptop's own split groups" if per_pmu[g.pmu] > 1 else ""
                self.messages.say(
                    f"unscheduled:{g.pmu}",
                    f"counters of PMU {g.pmu or '?'} never ran for some tasks while they ran "
                    f"(its counters were all taken: by another perf user such as perf or a "
                    f"second tiptop{own}); those cells show '?'",
                    subject=tuple(self.plan.aliases[j] for j in g.alias_index),
                )

    def _note_multiplexed(self, frame: Frame) -> None:
        """Say once per screen, at the first refresh that shows it, that its counters were
        multiplexed and for what part of the time they ran (the least and most
        ``Δrunning/Δenabled`` of the counter cells read then); why: the screen's events did
        not fit their PMU together (split by the plan), or other users of the PMU took
        counters (perf, a second tiptop, the NMI watchdog)."""
        if self._said_multiplexed:
            return
        run = frame.counter_running
        part = (frame.counter_status == Code.OK) & np.isfinite(run) & (run < 1.0)
        if not part.any():
            return
        self._said_multiplexed = True
        lo, hi = float(run[part].min()), float(run[part].max())
        ran = f"{lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{lo:.0%} to {hi:.0%}"
        split = self._screen_plan.split
        why = (
            "; ".join(
                f"its {n} events of PMU {pmu or '?'} do not fit the counters together: split "
                f"into {k} groups that the kernel multiplexes"
                for pmu, (n, k) in split.items()
            )
            or "other users of the PMU (perf, another tiptop, the NMI watchdog) hold counters"
        )
        self.messages.say(
            f"multiplexed:{self.screen.name}",
            f"screen '{self.screen.name}': {why}; its counters ran {ran} of the time, so "
            "its values are scaled estimates",
        )


__all__ = ["Sampler", "SamplerConfig"]
