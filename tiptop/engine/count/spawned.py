"""Counters of a command tiptop starts (``tiptop -- CMD``): opened on the forked child
before its ``execve``, disabled until then (``enable_on_exec``, perf_event_open(2)), and
adopted as its task's counters once ``/proc`` shows it (``Attacher``). In process mode
they count the child's whole process tree (docs/architecture.md, "Counting processes and
trees")."""

from __future__ import annotations

from collections.abc import Sequence

from tiptop.engine.count.readout import CounterPlan
from tiptop.engine.count.units import Stores, Unit
from tiptop.engine.scan.tasks import read_stat
from tiptop.errors import CounterError, TaskGone
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Backend


def tree_attrs(attrs: Sequence[Attr]) -> list[Attr]:
    """``attrs`` for a process tree's groups: inherited by threads and child processes."""
    return [a.replace(inherit=True, inherit_thread=False) for a in attrs]


class SpawnedCounters:
    """The counters of spawned children not adopted yet, and the spawned process trees."""

    def __init__(
        self, backend: Backend, plan: CounterPlan, proc_root: str, threads: bool, stores: Stores
    ) -> None:
        self.backend, self.plan, self.proc_root, self.threads = backend, plan, proc_root, threads
        self.stores = stores
        #: tid -> (starttime, units) of spawned children not adopted yet.
        self.waiting: dict[int, tuple[int, list[Unit]]] = {}
        #: pid -> starttime of spawned commands: their rows stand for their process tree.
        self.trees: dict[int, int] = {}

    def open(self, pid: int) -> tuple[int, list[Unit]] | None:
        """Counters, disabled until its ``execve``, on forked child ``pid`` that has not
        exec'd yet (a process tree's, in process mode): its starttime and the units
        opened, or None when it is gone. ``CounterError`` when a group cannot open (none
        is left open)."""
        try:
            starttime = read_stat(f"{self.proc_root}/{pid}/stat").starttime
        except TaskGone:
            return None
        tree = not self.threads
        units: list[Unit] = []
        try:
            for g, gdef in enumerate(self.plan.groups):
                attrs = tree_attrs(gdef.attrs) if tree else list(gdef.attrs)
                attrs = [a.replace(enable_on_exec=True, disabled=True) for a in attrs]
                units.append(Unit(self.backend.open_group(pid, attrs), g, self.stores))
        except CounterError:
            for u in units:
                u.close()
            raise
        self.waiting[pid] = (starttime, units)
        if tree:
            self.trees[pid] = starttime
        return starttime, units

    def stale(self) -> list[Unit]:
        """Forget the children that will never be adopted: gone from /proc, or there under
        another identity (PID reuse). Their units, for the caller to close."""
        units: list[Unit] = []
        for pid, (starttime, opened) in list(self.waiting.items()):
            try:
                same = read_stat(f"{self.proc_root}/{pid}/stat").starttime == starttime
            except TaskGone:
                same = False
            if not same:
                del self.waiting[pid]
                units += opened
        return units

    def close(self) -> None:
        """Close every unit not adopted yet."""
        for _, units in self.waiting.values():
            for u in units:
                u.close()
        self.waiting.clear()
