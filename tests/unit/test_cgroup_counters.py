"""Counting whole cgroups (tiptop/engine/count/cgroups.py) with a FAKE opener standing for
perf_event_open's PERF_FLAG_PID_CGROUP (the real one is tests/system/test_cgroup_events.py):
which cgroups are covered (leaves, within the cap), the attrs opened, one group per CPU,
the baseline, each CPU scaled by its own running fraction, a removed cgroup closed; and
what rows by cgroup and the exporter make of the counts."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from tiptop.choices import SeriesBy
from tiptop.engine.count.cgroups import CgroupCounters
from tiptop.engine.count.readout import CounterPlan, GroupDef
from tiptop.frame import CgroupCounts
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import GroupReading
from tiptop.kernel.group import parse_group_read
from tiptop.messages import MessageLog


class FakeGroup:
    """A group whose reads are scripted: cumulative (values, enabled, running) per read."""

    def __init__(self, reads: list[tuple[list[int], int, int]]) -> None:
        self.reads = reads
        self.n_fds = 2
        self.fds = [100, 101]
        self.closed = False

    @property
    def ids(self) -> tuple[int, ...]:
        """The members' ids, as :meth:`read_raw` writes them."""
        return tuple(1000 + i for i in range(len(self.reads[0][0])))

    def bare_read(self) -> Callable[[], bytes]:
        return self.read_raw

    def read(self) -> GroupReading:
        return parse_group_read(self.read_raw(), self.ids)

    def read_raw(self) -> bytes:
        """The words of ``PERF_FORMAT_GROUP | ID``: nr, enabled, running, {value, id}."""
        values, enabled, running = self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]
        words = [len(values), enabled, running]
        for i, v in enumerate(values):
            words += [v, 1000 + i]
        return np.array(words, "<u8").tobytes()

    def close(self) -> None:
        self.closed = True
        self.n_fds = 0


PLAN = CounterPlan(
    ("TC", "CS", "CYC"),  # cycles: no such event here, in no group
    [GroupDef("software", (Attr(1, 1, inherit=True), Attr(1, 3, inherit=True)), np.array([0, 1]))],
    np.array([True, True, False]),
    np.array([False, False, False]),
)


Script = Callable[[int], list[tuple[list[int], int, int]]]


def counters(
    tmp_path: Path, max_fds: int = 1000, script: Script | None = None
) -> tuple[CgroupCounters, list[tuple[int, Sequence[Attr]]], list[FakeGroup], MessageLog]:
    """Cgroup counters over the FAKE opener: the counters, what was opened (CPU, attrs),
    the groups made and the message log; ``script(cpu)``: each read of a CPU's group."""
    opened: list[tuple[int, Sequence[Attr]]] = []
    groups: list[FakeGroup] = []

    def opener(fd: int, cpu: int, attrs: Sequence[Attr]) -> FakeGroup:
        opened.append((cpu, attrs))
        reads = script(cpu) if script else [([0, 0], 0, 0)]
        groups.append(FakeGroup(reads))
        return groups[-1]

    log = MessageLog()
    return CgroupCounters(PLAN, str(tmp_path), [0, 1], log, max_fds, opener), opened, groups, log


def test_leaves_are_covered_one_group_per_cpu_without_inheritance(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "parent" / "child").mkdir(parents=True)
    c, opened, _groups, _log = counters(tmp_path)
    assert c.covers("/a") and c.covers("/a")  # opened once
    assert [cpu for cpu, _ in opened] == [0, 1]
    assert all(not a.inherit and not a.inherit_thread for _, attrs in opened for a in attrs)
    assert not c.covers("/parent")  # its count would hold its child's: tasks count themselves
    assert not c.covers("/gone")
    assert c.fds_used == 2 * 2 + 1  # two CPUs' groups of 2 fds, the directory's fd
    c.close()
    assert c.fds_used == 0


def test_past_the_cap_tasks_count_themselves_and_it_is_said_once(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).mkdir()
    c, _opened, _groups, log = counters(tmp_path, max_fds=2 * 2 * 2)  # room for two
    assert c.cap == 2
    assert c.covers("/a") and c.covers("/b") and not c.covers("/c") and not c.covers("/c")
    said = log.lines()
    assert len(said) == 1 and "more than 2 cgroups" in said[0]


def test_intervals_sum_the_cpus_each_scaled_by_its_own_running_fraction(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()

    def script(cpu: int) -> list[tuple[list[int], int, int]]:
        if cpu == 0:  # counted all the time it was enabled
            return [([10, 1], 100, 100), ([110, 3], 200, 200)]
        return [([0, 0], 0, 0), ([50, 5], 100, 50)]  # multiplexed: ran half the time

    c, _opened, _groups, _log = counters(tmp_path, script=script)
    c.covers("/a")
    first = c.read()["/a"]
    assert not first.ok.any()  # the baseline
    second = c.read()["/a"]
    assert second.ok.tolist() == [True, True, False]  # absent, not zero
    assert second.raw.tolist() == [150, 7, 0]
    assert second.scaled.tolist() == pytest.approx([100 + 100, 2 + 10, 0])
    assert second.running.tolist() == pytest.approx([150 / 200, 150 / 200, 1])
    assert second.total.tolist() == pytest.approx([200, 12, 0])
    assert not second.idle
    third = c.read()["/a"]  # enabled for no time on any CPU: none of its tasks ran
    assert third.idle and third.ok.tolist() == [True, True, False]
    assert third.raw.tolist() == [0, 0, 0]


def test_a_removed_cgroup_is_read_once_more_and_closed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    c, _opened, groups, _log = counters(tmp_path)
    c.covers("/a")
    c.read()
    (tmp_path / "a").rmdir()
    assert "/a" in c.read()
    assert all(g.closed for g in groups) and c.fds_used == 0
    assert c.read() == {}


def test_rows_and_the_exporter_take_the_cgroups_counts() -> None:
    """A group row's counters are its cgroup's counts where its tasks counted nothing;
    the exporter adds them to the cgroup's series with the events' own gauges."""
    from tests.support.builders import SCREEN, frame, task
    from tiptop.cells import Status
    from tiptop.exporter.aggregate import Aggregator, metrics_for
    from tiptop.sources.bycgroup import group

    f = frame([task(1, 50.0, 1.0, 1.0), task(2, 50.0, 1.0, 1.0)])
    f.counter_status[:] = Status.UNREADABLE  # their cgroup is counted whole: no own counters
    k = len(f.counters)
    counts = CgroupCounts(
        np.full(k, 5e6), np.full(k, 1e7), np.full(k, 0.5), np.full(k, 1e7), np.ones(k, bool)
    )
    g = group(f, SCREEN, ["web", "web"], counted={"web": counts})
    assert (g.counter_status == Status.OK).all()
    assert g.counter_scaled[0].tolist() == pytest.approx([1e7] * k)
    assert g.counter_running[0].tolist() == pytest.approx([0.5] * k)
    agg = Aggregator(
        metrics_for(SCREEN.counters),
        by=SeriesBy.CGROUP,
        cgroup_of=lambda pid: "web",
        cgroup_counts=lambda pids: {"web": counts},
    )
    snap = agg.update(f)
    fams = {fam.name: dict(fam.samples) for fam in snap.families}
    key = ("",) * 6 + ("web",)
    assert fams["tiptop_cycles_total"][key] == pytest.approx(1e7)
    assert all(v == 1.0 for v in fams["tiptop_event_read_ok"].values())
    assert all(v == 0.5 for v in fams["tiptop_event_running_ratio"].values())


def test_a_leaf_that_gains_a_child_cgroup_is_no_longer_counted_whole(tmp_path: Path) -> None:
    """The kernel counts a child cgroup's tasks into its parent's events: a followed leaf
    that gains a child is closed at that read, its interval not given, its path handed
    to the sampler (``split``) and said once; it is not counted whole again while it
    lives, even with its children gone; the child is a leaf of its own."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "probe" / "child").mkdir(parents=True)
    if os.stat(tmp_path / "probe").st_nlink != 3:
        pytest.skip("this file system does not count subdirectories in a directory's links")
    c, _opened, groups, log = counters(tmp_path)
    assert c.covers("/a") and c.covers("/b")
    assert set(c.read()) == {"/a", "/b"} and c.split == []
    (tmp_path / "a" / "child").mkdir()
    read = c.read()
    assert set(read) == {"/b"} and c.split == ["/a"]
    assert [g.closed for g in groups] == [True, True, False, False]  # /a's two CPUs
    assert c.fds_used == 2 * 2 + 1
    assert set(c.read()) == {"/b"} and c.split == []  # said at one read only
    assert c.covers("/a/child")
    (tmp_path / "a" / "child").rmdir()
    assert not c.covers("/a")  # a leaf again, but its tasks count themselves now
    said = log.lines()
    assert len(said) == 1 and "'/a' gained child cgroups" in said[0]
