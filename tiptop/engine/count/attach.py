"""Attaching and detaching counter groups: the fd budget, reclaim, retries, and the
adoption of a spawned command's counters (opened before its exec: ``engine.count.spawned``).
The sampler *holds* one :class:`Attacher`.

Per-task counters are kept by task identity ``(tid, starttime)`` (proc(5), ``stat``
field 22), so a reused PID never inherits another task's counters.

*fds.* Every open group costs one fd per member (perf_event_open(2) returns one fd per
event), a counted task one pidfd while fds allow (given up first when counters need the
room: ``engine.count.exits``). The budget is the soft RLIMIT_NOFILE (raised to the hard limit)
minus what is in use and a reserve (``Host.fd_budget``); busy tasks are opened first; out
of fds, idle tasks' groups are closed (unless ``collect`` is off) and their counts kept in the
task's total, and every task left without counters is retried at later refreshes. EMFILE
or ENFILE from the kernel shrink the budget to what is open.

Which threads get groups, with which ``inherit`` flags, for process rows, ``-H`` rows and
a spawned command's process tree: docs/architecture.md, "Counting processes and trees".
"""

from __future__ import annotations

import contextlib
import errno
import time
from collections.abc import Callable, Sequence

from tiptop.engine.count.counters import Changes, Clocked, Counts, RowReading, TaskCounters
from tiptop.engine.count.exits import ExitWatch
from tiptop.engine.count.readout import CounterPlan
from tiptop.engine.count.spawned import SpawnedCounters, tree_attrs
from tiptop.engine.count.units import Stores, Unit
from tiptop.engine.scan.task import Identity, dir_mark
from tiptop.engine.scan.tasks import Scan, Task, list_threads
from tiptop.errors import (
    CounterError,
    EventRefused,
    EventUnsupported,
    GroupChanging,
    OutOfFds,
    TaskGone,
)
from tiptop.kernel.backend import Backend
from tiptop.messages import MessageLog

#: Attaches in a row that may fail like a race with the task before it is given up.
RACE_TRIES = 5
#: pidfds given up at least at a time when counters need their fds (``Attacher._room``).
SHED = 64
#: Tasks to open that last ran on one CPU for the opener to move there first
#: (``Attacher._placed``): a move costs it less than one task opened from another CPU
#: (benchmarks/README.md), so a few pay for it even where some have moved since.
NEAR = 4
#: ``explain(error, what, pmu)``: one line for a failed open (``Planner.explain``).
Explain = Callable[[OSError, str, "str | None"], str]


class Attacher:
    """Opens, budgets, reads, reclaims and closes the groups of the watched tasks."""

    def __init__(
        self,
        backend: Backend,
        plan: CounterPlan,
        log: MessageLog,
        explain: Explain,
        *,
        proc_root: str,
        fd_budget: int,
        threads: bool,
        collect: bool,
        cpu_threshold: float,
        clock: Callable[[], float] = time.monotonic,
        run_clocks: bool = False,
    ) -> None:
        self.backend = backend
        #: Monotonic seconds, for the counters' window (``Host.clock.monotonic``).
        self._clock = clock
        self.plan = plan
        self.log = log
        self.explain = explain
        self.proc_root = proc_root
        self.fd_budget = fd_budget
        self.fds_used = 0
        self.threads = threads
        self.collect = collect
        self.cpu_threshold = cpu_threshold
        self._counters: dict[Identity, TaskCounters] = {}
        self._pending: dict[Identity, Task] = {}
        self._stores = Stores(backend)
        self._spawned = SpawnedCounters(backend, plan, proc_root, threads, self._stores)
        self._exits = ExitWatch(backend.open_pidfd)
        #: pidfds were given up for counters' fds: no new one is taken (``_room``).
        self._shed = False
        self._reclaimable = True
        #: Changes to the tasks' counters, counted by their ``TaskCounters`` (a task that
        #: still waits for fds changes nothing): what says the kept reading is stale.
        self._changes = Changes()
        self._reading: RowReading | None = None
        #: Which rows' groups are read only when their process's CPU-time clock moved
        #: (``engine.count.counters.RunClocks``); None: every row's at each read.
        self._clocked: Clocked | None = self._unspawned if run_clocks else None
        #: When the counters were last read (:attr:`_clock`), for the next window.
        self._read_at: float | None = None
        #: Tasks counted elsewhere, whole, with their cgroup (``engine.count.cgroups``):
        #: they get no counters of their own; None: every task gets its own.
        self.elsewhere: Callable[[Task], bool] | None = None

    # ------------------------------------------------------------------ readout
    def read(self, rows: Sequence[Task]) -> Counts:
        """Read every group of ``rows`` once (``tiptop.engine.count.readout``). A group whose
        read fails is closed with what it counted kept in the task's total; the task is
        reopened at a later refresh unless it is gone."""
        plan = self.plan
        now = self._clock()
        window = 0.0 if self._read_at is None else now - self._read_at
        self._read_at = now
        r = self._reading
        if r is None or not r.holds(rows):
            r = self._reading = RowReading(
                plan, rows, self._counters, self._changes, self._clocked, self.trees
            )
        states = r.states
        clocks = r.clocks
        moved = None if clocks is None else clocks.moved(self.backend.run_times)
        readout, failed = r.reading.read(moved)
        if r.inherited.any():  # a tree's one unit is no bound of its window (RowReading)
            readout.longest[r.inherited] = 0.0
        if clocks is not None:
            clocks.read(i for i, _, _ in failed)
        exited = self._exits.ended()
        still = readout.did_not_run()
        # Without a pidfd or a mark an exit and a PID reused in the same clock tick look
        # alike to a task that slept; counters disabled until exec say nothing of running.
        # Most tasks have a pidfd and are not spawned: only the others are looked at.
        still[r.unsure] = False
        marks = r.watched_marks(still)
        if exited:
            for i, t in enumerate(rows):
                if t.key in exited:
                    still[i] = False
        for i, u, e in failed:
            still[i] = False
            if isinstance(e, GroupChanging):
                # Still changing after a few reads: keep the group and its last read; the
                # next refresh's delta covers both intervals. This row shows '?' once.
                continue
            st = states[i]
            st.retire(plan, [u])
            st.units = [v for v in st.units if v is not u]
            self.fds_used -= u.group.n_fds
            u.close()
            if not isinstance(e, TaskGone) and not st.units:
                # EIO (a short read) and the like: reopen later.
                self._wait(
                    rows[i],
                    f"read-failed:{e.errno}",
                    f"reading counters failed ({_errname(e)}): reopening them",
                )
        # Only a process row's clock is its own: -H rows share their process's.
        own = clocks if not self.threads else None
        return Counts(
            readout,
            r.retired(),
            still,
            exited,
            marks,
            r.tids,
            window,
            r.leaders,
            clocked=None if own is None else own.told(),
            moved=None if own is None else moved,
        )

    def _unspawned(self, t: Task, st: TaskCounters) -> bool:
        """Whether ``t``'s groups are on its process's own threads only, counting since
        their opening: not a spawned command's (disabled until its exec, or a process
        tree's), the rule of ``RunClocks``."""
        return bool(st.units) and not st.spawned and t.pid not in self.trees

    # ------------------------------------------------------------------ lifecycle
    def count_own(self, tasks: Sequence[Task]) -> None:
        """Open counters of their own on ``tasks``, counted with their cgroup until now
        (:attr:`elsewhere`), at the next :meth:`attach`: their cgroup is no longer counted
        whole (``engine.count.cgroups``, a cgroup that gained children). A task with
        counters already, refused them, or gone, is left as it is."""
        for t in tasks:
            st = self._counters.get(t.key)
            if st is not None and not st.units and not st.denied:
                self._pending[t.key] = t

    def reopen(self, tasks: Sequence[Task]) -> None:
        """Close the groups of ``tasks``, whose counters ended while they run
        (``engine.sampler.counters_ended``), keeping what they counted, and open them again
        at the next :meth:`attach` (refused, after a set-user-ID exec, as any open)."""
        for t in tasks:
            st = self._counters.get(t.key)
            if st is None or not st.units:
                continue
            self._close(st, keep=True)
            self._wait(t, "counters-ended", "counters of a task ended at an exec: reopening them")

    def detach(self, tasks: Sequence[Task]) -> None:
        """Close the groups of tasks that are gone and forget them."""
        for t in tasks:
            self._pending.pop(t.key, None)
            st = self._counters.pop(t.key, None)
            if st is not None:
                self._close(st)

    def attach(self, scan: Scan, tree: dict[int, list[int]]) -> None:
        """Open groups on the scan's new tasks and retry waiting ones, busy first.
        ``tree`` maps each tree root to its live descendants (``TaskScanner.tree``)."""
        for t in scan.new:
            self._counters[t.key] = TaskCounters(self._changes)
        if self._pending:  # only tasks of this scan: a gone one is never reopened
            live = {t.key for t in scan.tasks}
            for key in [k for k in self._pending if k not in live]:
                del self._pending[key]
        if self._spawned.waiting:
            self._drop_units(self._spawned.stale())
        todo = scan.new + [t for t in self._pending.values() if not t.new]
        todo.sort(key=lambda t: t.cpu_lifetime if t.new else t.cpu_total, reverse=True)
        self._reclaimable = True  # until a reclaim finds nothing to close (``_reclaim``)
        if self._shed and not todo and self.fds_used + SHED < self.fd_budget:
            self._shed = False  # nothing waits and fds are spare: new tasks get pidfds
        try:
            for cpu, part in self._placed(todo):
                if cpu is not None:
                    self.backend.open_from(cpu)
                self._open_tasks(part, scan.tasks, tree)
        finally:
            self.backend.open_from(None)
        if self._read_at is None:  # the groups opened now are the first reads
            self._read_at = self._clock()

    def _open_tasks(
        self, todo: list[Task], tasks: Sequence[Task], tree: dict[int, list[int]]
    ) -> None:
        """Open the groups of ``todo``, in order, as fds allow."""
        fpt = self.plan.fds_per_thread
        for t in todo:
            if not self._busy(t) and self._no_room(fpt) and t.tid not in self._spawned.waiting:
                # Waiting, not busy (so it reclaims nothing), and not one thread's groups
                # fit: what _open_task() would find, without listing its threads.
                continue
            self._open_task(t, tasks, tree)

    def _placed(self, todo: list[Task]) -> list[tuple[int | None, list[Task]]]:
        """``todo`` in parts, each with the CPU to open it from (``Backend.open_from``),
        or None: from wherever. The tasks that last ran on one CPU, where at least
        ``NEAR`` did, are a part opened from that CPU (each of its tasks then costs the
        kernel no cross-CPU call), the others a last part. Busy first, from wherever,
        when their fds may not all fit: the order then says which tasks get them."""
        if len(todo) < NEAR:
            return [(None, todo)]
        need = sum(t.num_threads for t in todo) * self.plan.fds_per_thread + len(todo)
        if self.fds_used + need > self.fd_budget:
            return [(None, todo)]
        on: dict[int, list[Task]] = {}
        for t in todo:
            on.setdefault(t.processor, []).append(t)
        parts: list[tuple[int | None, list[Task]]] = [
            (cpu, part) for cpu, part in on.items() if len(part) >= NEAR
        ]
        rest = [t for part in on.values() if len(part) < NEAR for t in part]
        return [*parts, (None, rest)] if rest else parts

    def close(self) -> None:
        """Close every fd (the tasks are forgotten; spawned counters too). The exit watch's
        epoll set goes first, so that no pidfd is taken out of it one by one
        (``ExitWatch.close``)."""
        self._reading = None
        self._exits.close()
        for st in self._counters.values():
            self._close(st)
        self._counters.clear()
        self._pending.clear()
        self._spawned.close()
        self.fds_used = 0

    # ------------------------------------------------------------------ spawned
    @property
    def trees(self) -> dict[int, int]:
        """pid -> starttime of spawned commands: their rows stand for their process tree."""
        return self._spawned.trees

    def attach_spawned(self, pid: int) -> int | None:
        """Counters on a forked child before its ``execve`` (``engine.count.spawned``), adopted
        as its task's once /proc shows it. Its starttime, or None when it is gone or
        nothing could open."""
        try:
            opened = self._spawned.open(pid)
        except CounterError as e:
            self.log.say(f"spawned:{e.errno}", self.explain(e, f"PID {pid}", None))
            return None
        if opened is None:
            return None
        starttime, units = opened
        self.fds_used += sum(u.group.n_fds for u in units)
        return starttime

    def _drop_units(self, units: list[Unit]) -> None:
        for u in units:
            self.fds_used -= u.group.n_fds
            u.close()

    # ------------------------------------------------------------------ groups
    def _close(self, st: TaskCounters, *, keep: bool = False) -> None:
        if keep and st.units:
            st.retire(self.plan, st.units)
        self._drop_units(st.units)
        st.units = []
        if st.exit_fd is not None:
            self._exits.forget(st.exit_fd)
            self.fds_used -= 1
            st.exit_fd = None

    def _targets(self, t: Task, tree: dict[int, list[int]]) -> tuple[list[int], bool]:
        """The tids to open ``t``'s groups on, and whether they are a process tree's."""
        if self.threads:
            return [t.tid], False
        tids = list_threads(self.proc_root, t.pid)
        if self.trees.get(t.pid) != t.starttime:
            return tids, False
        for d in tree.get(t.pid, ()):
            with contextlib.suppress(TaskGone, PermissionError):
                tids += list_threads(self.proc_root, d)
        return tids, True

    def _open_task(self, t: Task, tasks: Sequence[Task], tree: dict[int, list[int]]) -> None:
        st = self._counters.get(t.key)
        if st is None:
            st = self._counters[t.key] = TaskCounters(self._changes)
        spawned = self._spawned.waiting.pop(t.tid, None)
        if spawned is not None:
            if spawned[0] == t.starttime:
                st.units = spawned[1]
                st.spawned = True
                return
            self._drop_units(spawned[1])  # that child is gone; its PID was reused
        if not self.plan.groups or st.denied:
            return
        if self.elsewhere is not None and self.elsewhere(t):
            return
        busy = self._busy(t)
        if not self._room(self.plan.fds_per_thread) and not (
            self.collect and busy and self._reclaimable
        ):
            # Not one thread's groups fit and none will be reclaimed for it: wait without
            # listing its threads (a directory read per waiting task and refresh).
            self._out_of_fds(t)
            return
        try:
            tids, is_tree = self._targets(t, tree)
        except (TaskGone, PermissionError):
            return
        need = len(tids) * self.plan.fds_per_thread
        if not self._room(need):
            if self.collect and busy and self._reclaimable:
                self._reclaimable = self._reclaim(need, t, tasks)
            if self.fds_used + need > self.fd_budget:
                self._out_of_fds(t)
                return
        units = self._open_units(t, st, tids, is_tree, again=2)
        if units is None:
            return
        st.units = units
        st.tries = 0
        self._pending.pop(t.key, None)
        self.fds_used += sum(u.group.n_fds for u in units)
        if units and self.fds_used < self.fd_budget and not self._shed:
            st.exit_fd = self._exits.watch(t, self.threads)
            self.fds_used += st.exit_fd is not None
        if units and st.exit_fd is None and self._exits.able:
            # No pidfd (fds short, or none to be had): its /proc mark instead (engine.count.exits).
            st.mark = dir_mark(f"{self.proc_root}/{t.tid}")

    def _open_units(
        self, t: Task, st: TaskCounters, tids: list[int], is_tree: bool, again: int = 0
    ) -> list[Unit] | None:
        """Every group of the plan on every tid; None (nothing left open) on a failure
        that is not a thread's exit. A race with the task itself is tried ``again`` more
        times at once (it is usually over by then) before it waits for the next refresh."""
        units: list[Unit] = []
        for tid in tids:
            for g, gdef in enumerate(self.plan.groups):
                attrs = tree_attrs(gdef.attrs) if is_tree else gdef.attrs
                try:
                    units.append(Unit(self.backend.open_group(tid, attrs), g, self._stores))
                except TaskGone:  # the thread exited meanwhile: drop it
                    break
                except (EventRefused, EventUnsupported, GroupChanging) as e:
                    if tid == t.tid:
                        for u in units:
                            u.close()
                        if again:
                            return self._open_units(t, st, tids, is_tree, again - 1)
                        self._raced(t, st, e)
                        return None
                    # The event opened on ourselves at plan time: another thread failing
                    # is exiting under us (ENODEV, EINVAL, ECHILD), not unsupported.
                    break
                except CounterError as e:
                    for u in units:
                        u.close()
                    self._refused(t, st, e, gdef.pmu)
                    return None
        return units

    def _raced(self, t: Task, st: TaskCounters, e: CounterError) -> None:
        """An event that opened on ourselves at plan time failed on ``t`` itself: the
        task was changing under us (exiting, exec'ing). Retried at the next refreshes, up
        to ``RACE_TRIES`` times in a row, and never explained as missing hardware."""
        st.tries += 1
        if st.tries >= RACE_TRIES:
            self._refused(t, st, e, "")
            return
        self._wait(
            t,
            f"attach-race:{e.errno}",
            f"PID {t.pid} {t.name!r}: {_errname(e)} while attaching counters, although the "
            "events open here: the task was changing (threads exiting?); retried at the "
            "next refresh",
        )

    def _refused(self, t: Task, st: TaskCounters, e: CounterError, pmu: str) -> None:
        """An open failed on ``t``: out of fds is retried later; anything else is final
        for this task's identity (said once per errno)."""
        if isinstance(e, OutOfFds):
            self.fd_budget = self.fds_used
            self._wait(t, "fds-kernel", self.explain(e, "counters", None))
            return
        if isinstance(e, (EventRefused, EventUnsupported)):
            why = (
                f"{_errname(e)} on this task {RACE_TRIES} times in a row, although the "
                "events open here"
            )
            st.denied = True
            self._pending.pop(t.key, None)
            line = f"cannot watch some tasks (first: PID {t.pid} {t.name!r}): {why}"
            self.log.say(f"race-final:{e.errno}", line)
            return
        st.denied = True
        self._pending.pop(t.key, None)
        why = self.explain(e, pmu or "?", pmu).split(": ", 1)[1]
        self.log.say(
            f"denied:{e.errno}", f"cannot watch some tasks (first: PID {t.pid} {t.name!r}): {why}"
        )

    def _room(self, need: int) -> bool:
        """Whether ``need`` more fds fit the budget, pidfds given up for them if that makes
        the room (see ``engine.count.exits``; oldest tasks' first, at least ``SHED`` at a time:
        each give-up polls every pidfd). No new pidfd is taken until fds are plenty again."""
        short = self.fds_used + need - self.fd_budget
        if short <= 0:
            return True
        if self._no_room(need):
            return False
        want = min(max(short, SHED), len(self._exits))
        freed = self._exits.give_up(self._counters.items(), want, self.proc_root)
        self._shed = self._shed or freed > 0
        self.fds_used -= freed
        return freed >= short

    def _no_room(self, need: int) -> bool:
        """Whether ``need`` more fds cannot fit even with every pidfd given up."""
        return self.fds_used + need - self.fd_budget > len(self._exits)

    def _busy(self, t: Task) -> bool:
        """Whether ``t`` may reclaim idle tasks' fds: new, or at the CPU threshold."""
        return t.new or t.cpu_total >= self.cpu_threshold

    def _out_of_fds(self, t: Task) -> None:
        self._wait(
            t,
            "fds",
            f"out of file descriptors (budget {self.fd_budget}): "
            "some tasks are not counted (retried when fds free up)",
        )

    def _wait(self, t: Task, key: str, why: str) -> None:
        """``t`` gets no counters now; it is retried at later refreshes."""
        self._pending[t.key] = t
        self.log.say(key, why)

    def _reclaim(self, need: int, keep: Task, tasks: Sequence[Task]) -> bool:
        """Close idle tasks' groups (oldest first) until ``need`` fds fit the budget.
        False when none could be closed: the rest of this attach round does not try again
        (each try walks every task: with many new tasks waiting, trying again for each
        would cost a pass per task)."""
        closed = False
        for t in tasks:
            if self.fds_used + need <= self.fd_budget:
                return True
            st = self._counters.get(t.key)
            if t is keep or t.new or st is None or not st.units:
                continue
            if t.cpu_total < self.cpu_threshold:
                self._close(st, keep=True)
                self._pending[t.key] = t
                closed = True
        return closed


def _errname(e: OSError) -> str:
    return errno.errorcode.get(e.errno or 0, str(e.errno))
