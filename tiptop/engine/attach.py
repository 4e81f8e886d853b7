"""Opening and closing the sampler's counter groups: the fd budget, reclaim, retries, and
the counters of a spawned command (the task-lifecycle half of ``tiptop.engine.sampler``).

:class:`GroupOpener` is a base class of ``tiptop.engine.sampler.Sampler`` and works on the
sampler's own state (``plan``, ``config``, ``fds_used``, ``fd_budget``...); it exists so
that each module stays small. See the sampler's module doc for the rules.

*fds.* Every open group costs one fd per member (peers.md 4.3). The budget is the soft
RLIMIT_NOFILE (raised to the hard limit) minus what is in use and a reserve; busy tasks are
opened first; out of fds, idle tasks' groups are closed (``collect``) and their counts so far
kept in the task's total, and every task left without counters is retried at later
refreshes. EMFILE/ENFILE from the kernel shrink the budget to what is open.

*A spawned command counts its whole process tree* (``tiptop -- cmd``, as ``perf stat --
cmd``). In process mode its groups are opened with ``inherit=1`` and *without*
``inherit_thread``: every thread and child process it creates later gets a copy of the
group (perf_event_open(2), "inherit"), and when one exits the kernel adds its counts to the
parent event (kernel/events/core.c, ``perf_event_exit_task`` -> ``sync_child_event``), so
short-lived descendants are counted exactly. Its row's %CPU follows the same tree
(``TaskScanner.add_tree_root``). Groups reopened later on that tree (a screen switch, a
retry) are opened on every thread of the root and of each live descendant, each with
the same attrs: processes forked afterwards fold into them, nothing is counted twice. With
``-H`` the spawned command's threads are rows of their own and its children are not
followed (per-thread groups do not inherit).
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tiptop.engine.readout import Unit, unit_totals
from tiptop.engine.tasks import Scan, Task, list_threads, read_stat
from tiptop.errors import TaskGone
from tiptop.kernel.attr import Attr

if TYPE_CHECKING:
    from tiptop.engine.plan import Binder
    from tiptop.engine.readout import CounterPlan
    from tiptop.engine.sampler import SamplerConfig
    from tiptop.engine.tasks import TaskScanner
    from tiptop.kernel.backend import Backend

#: fds kept free for everything else tiptop opens (files, terminal, /proc reads).
FD_RESERVE = 64
_OUT_OF_FDS = (errno.EMFILE, errno.ENFILE)


class TaskState:
    """The sampler's side of one watched task."""

    __slots__ = ("denied", "retired", "units")

    def __init__(self) -> None:
        self.units: list[Unit] = []
        #: Counts of groups closed while the task lived (reclaim, read error), per alias.
        self.retired: np.ndarray | None = None
        #: Refused for good (EACCES...): never retried for this identity.
        self.denied = False

    def retire(self, plan: CounterPlan, units: Sequence[Unit]) -> None:
        """Keep what ``units`` counted (to their last read) in the task's total, before
        they are closed while the task lives."""
        kept = unit_totals(plan, units)
        self.retired = kept if self.retired is None else self.retired + kept


def tree_attrs(attrs: Sequence[Attr]) -> list[Attr]:
    """``attrs`` for a process tree's groups: inherited by threads and child processes."""
    return [a.replace(inherit=True, inherit_thread=False) for a in attrs]


class GroupOpener:
    """Opens, budgets, reclaims and closes the groups of the sampler's tasks."""

    # The sampler's state this half works on (set by Sampler.__init__/_bind/_reset).
    plan: CounterPlan
    config: SamplerConfig
    proc_root: str
    fd_budget: int
    fds_used: int
    _backend: Backend
    _binder: Binder
    _scanner: TaskScanner
    _pending: dict[int, Task]
    _tasks: list[Task]
    #: pid -> (starttime, units) of spawned children not adopted yet.
    _spawned: dict[int, tuple[int, list[Unit]]]
    #: pid -> starttime of spawned commands: their rows stand for their process tree.
    _trees: dict[int, int]

    def _say(self, line: str, key: object = None) -> None:
        """Record a problem once (the sampler's message log)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ spawned
    def attach_spawned(self, pid: int) -> None:
        """Open counters, disabled until its ``execve`` (``enable_on_exec``), on a forked
        child that has not exec'd yet; adopted as its task's counters once /proc shows it.
        In process mode they count the child's whole process tree (see the module doc)."""
        try:
            starttime = read_stat(f"{self.proc_root}/{pid}/stat").starttime
        except TaskGone:  # it is gone already: nothing to count
            return
        tree = not self.config.threads
        units: list[Unit] = []
        try:
            for g, gdef in enumerate(self.plan.groups):
                attrs = tree_attrs(gdef.attrs) if tree else list(gdef.attrs)
                attrs = [a.replace(enable_on_exec=True, disabled=True) for a in attrs]
                units.append(Unit(self._backend.open_group(pid, attrs), g))
        except OSError as e:
            for u in units:
                u.close()
            self._say(self._binder.explain(e, f"PID {pid}"))
            return
        self.fds_used += sum(u.group.n_fds for u in units)
        self._spawned[pid] = (starttime, units)
        if tree:
            self._trees[pid] = starttime
            self._scanner.add_tree_root(pid, starttime)

    def _drop_spawned(self, units: list[Unit]) -> None:
        for u in units:
            self.fds_used -= u.group.n_fds
            u.close()

    def _prune_spawned(self, scan: Scan) -> None:
        """Close counters attached to spawned children that will never be adopted: the
        child is gone from /proc, or is there under another identity (PID reuse)."""
        for pid, (starttime, units) in list(self._spawned.items()):
            try:
                same = read_stat(f"{self.proc_root}/{pid}/stat").starttime == starttime
            except TaskGone:
                same = False
            if not same:
                del self._spawned[pid]
                self._drop_spawned(units)

    # ------------------------------------------------------------------ groups
    def _close_task(self, t: Task, *, keep: bool = False) -> None:
        st = t.data
        if not isinstance(st, TaskState):
            return
        if keep and st.units:
            st.retire(self.plan, st.units)
        for u in st.units:
            self.fds_used -= u.group.n_fds
            u.close()
        st.units = []

    def _open_new(self, scan: Scan) -> None:
        """Open groups on new tasks and retry waiting ones, busy first."""
        for t in scan.new:
            t.data = TaskState()
        if self._pending:  # only tasks of this scan: a gone one is never reopened
            live = {id(t) for t in scan.tasks}
            for key in [k for k in self._pending if k not in live]:
                del self._pending[key]
        if self._spawned:
            self._prune_spawned(scan)
        todo = scan.new + [t for t in self._pending.values() if not t.new]
        todo.sort(key=lambda t: t.cpu_lifetime if t.new else t.cpu_total, reverse=True)
        for t in todo:
            self._open_task(t)

    def _targets(self, t: Task) -> tuple[list[int], bool]:
        """The tids to open ``t``'s groups on, and whether they are a process tree's."""
        if self.config.threads:
            return [t.tid], False
        tids = list_threads(self.proc_root, t.pid)
        if self._trees.get(t.pid) != t.starttime:
            return tids, False
        for d in self._scanner.tree.get(t.pid, ()):
            with contextlib.suppress(TaskGone, PermissionError):
                tids += list_threads(self.proc_root, d)
        return tids, True

    def _open_task(self, t: Task) -> None:
        st: TaskState = t.data  # type: ignore[assignment]
        spawned = self._spawned.pop(t.tid, None)
        if spawned is not None:
            if spawned[0] == t.starttime:
                st.units = spawned[1]
                return
            self._drop_spawned(spawned[1])  # that child is gone; its PID was reused
        if not self.plan.groups or st.denied:
            return
        try:
            tids, tree = self._targets(t)
        except (TaskGone, PermissionError):
            return
        need = len(tids) * self.plan.fds_per_thread
        if self.fds_used + need > self.fd_budget:
            busy = t.new or t.cpu_total >= self.config.cpu_threshold
            if self.config.collect and busy:
                self._reclaim(need, t)
            if self.fds_used + need > self.fd_budget:
                self._wait(t, f"out of file descriptors (budget {self.fd_budget}): some "
                           "tasks are not counted (retried when fds free up)", "fds")  # fmt: skip
                return
        units: list[Unit] = []
        for tid in tids:
            for g, gdef in enumerate(self.plan.groups):
                attrs = tree_attrs(gdef.attrs) if tree else gdef.attrs
                try:
                    units.append(Unit(self._backend.open_group(tid, attrs), g))
                except OSError as e:
                    if e.errno == errno.ESRCH:  # the thread exited meanwhile: drop it
                        break
                    for u in units:
                        u.close()
                    if e.errno in _OUT_OF_FDS:
                        self.fd_budget = self.fds_used
                        self._wait(t, self._binder.explain(e, "counters"))
                        return
                    st.denied = True
                    self._pending.pop(id(t), None)
                    why = self._binder.explain(e, gdef.pmu or "?", gdef.pmu).split(": ", 1)[1]
                    self._say(
                        f"cannot watch some tasks (first: PID {t.pid} {t.name!r}): {why}",
                        key=("denied", e.errno),
                    )
                    return
        st.units = units
        self._pending.pop(id(t), None)
        self.fds_used += sum(u.group.n_fds for u in units)

    def _wait(self, t: Task, why: str, key: object = None) -> None:
        """``t`` gets no counters now; it is retried at later refreshes."""
        self._pending[id(t)] = t
        self._say(why, key)

    def _reclaim(self, need: int, keep: Task) -> None:
        """Close idle tasks' groups (oldest first) until ``need`` fds fit the budget."""
        threshold = self.config.cpu_threshold
        for t in self._tasks:
            if self.fds_used + need <= self.fd_budget:
                return
            st = t.data
            if t is keep or t.new or not isinstance(st, TaskState) or not st.units:
                continue
            if t.cpu_total < threshold:
                self._close_task(t, keep=True)
                self._pending[id(t)] = t
