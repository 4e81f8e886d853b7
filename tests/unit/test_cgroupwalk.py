"""The exporter's cgroup walk (tiptop/engine/cgroupwalk.py) over a FAKE cgroup tree: plain
directories in a temporary directory with ``cpu.stat`` and ``cgroup.procs`` written by the
test, the events through the FAKE opener of test_cgroup_counters (the real tree:
tests/system/test_cgroup_walk.py). Each row's processes and CPU, a cgroup with children
given its own processes' CPU and no event counts, a leaf's events, a new cgroup found and
counted from its birth, a removed one's last row and its series ended."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.builders import SCREEN
from tests.unit.test_cgroup_counters import FakeGroup
from tiptop.cells import Code
from tiptop.choices import SeriesBy
from tiptop.engine.cgroupwalk import SWEEP, CgroupWalker
from tiptop.engine.count.cgroups import CgroupCounters
from tiptop.engine.count.readout import CounterPlan, GroupDef
from tiptop.exporter.aggregate import Aggregator, Snapshot, metrics_for
from tiptop.frame import Frame
from tiptop.host import Clock
from tiptop.kernel.attr import Attr
from tiptop.messages import MessageLog
from tiptop.runtimes import Workloads

PLAN = CounterPlan(
    ("CYCLE", "INSN"),
    [GroupDef("cpu", (Attr(0, 0), Attr(0, 1)), np.array([0, 1]))],
    np.array([True, True]),
    np.array([False, False]),
)


def write(tree: Path, path: str, usage: float, procs: int, throttled: float = 0.0) -> None:
    """Cgroup ``path`` of the fake tree: its ``cpu.stat`` (seconds, as microseconds; user
    a quarter of the usage) and ``procs`` lines of ``cgroup.procs``."""
    d = tree / path.strip("/")
    d.mkdir(parents=True, exist_ok=True)
    us = round(usage * 1e6)
    (d / "cpu.stat").write_text(
        f"usage_usec {us}\nuser_usec {us // 4}\nsystem_usec {us - us // 4}\n"
        f"nr_periods 0\nnr_throttled 0\nthrottled_usec {round(throttled * 1e6)}\n"
    )
    (d / "cgroup.procs").write_text("".join(f"{100 + i}\n" for i in range(procs)))


class Tick:
    """A clock the test moves: 2 s a refresh; wall time 0 at the start, so every cgroup
    made during the test was made after it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """The root (its own processes and usage), leaves ``/a`` and ``/b``, and ``/slice``
    with one leaf ``/slice/c``."""
    write(tmp_path, "/", 10.0, 5)
    write(tmp_path, "/a", 1.0, 3)
    write(tmp_path, "/b", 1.0, 0)
    write(tmp_path, "/slice", 2.0, 1)
    write(tmp_path, "/slice/c", 1.0, 2)
    yield tmp_path


def walker(tree: Path, reads: list[tuple[list[int], int, int]]) -> tuple[CgroupWalker, Tick]:
    """A walk of ``tree`` whose every leaf's events on each of 2 CPUs read ``reads`` in
    turn (cumulative values, enabled, running)."""

    def opener(_fd: int, _cpu: int, _attrs: object) -> FakeGroup:
        return FakeGroup(list(reads))

    log = MessageLog()
    counters = CgroupCounters(PLAN, str(tree), [0, 1], log, 1000, opener)
    tick = Tick()
    clock = Clock(monotonic=tick, wall=lambda: tick.now - 1.0)
    source = CgroupWalker(SCREEN, counters, str(tree), Workloads(None).of, log, clock)
    source.start()
    return source, tick


def refresh(source: CgroupWalker, tick: Tick) -> Frame:
    tick.now += 2.0
    return source.refresh()


def rows(frame: Frame) -> dict[str, int]:
    """Row index per cgroup label."""
    assert frame.workload is not None
    return {w.label: i for i, w in enumerate(frame.workload)}


def series(snap: Snapshot, name: str) -> dict[str, float]:
    """One family's samples by the ``cgroup`` label."""
    fams = {f.name: f for f in snap.families}
    return {key[-1]: v for key, v in fams[name].samples} if name in fams else {}


#: Each CPU's reads: 4,000 cycles and 8,000 instructions a refresh, never idle.
BUSY = [([4_000 * i, 8_000 * i], 100 * i, 100 * i) for i in range(8)]


def test_rows_say_their_processes_and_cpu(tree: Path) -> None:
    source, tick = walker(tree, BUSY)
    write(tree, "/a", 3.5, 3, throttled=0.5)  # 2.5 s of CPU in 2 s
    write(tree, "/", 20.0, 5)
    write(tree, "/slice", 6.0, 1)  # grew 4 s, of which its child's 1 s
    write(tree, "/slice/c", 2.0, 2)
    f = refresh(source, tick)
    at = rows(f)
    assert set(at) == {"/", "a", "slice", "slice/c"}  # b: no process, no CPU
    assert f.by_cgroup and f.processes is not None
    assert [int(f.processes[at[c]]) for c in ("/", "a", "slice", "slice/c")] == [5, 3, 1, 2]
    assert f.cpu_total[at["a"]] == pytest.approx(125.0)
    assert f.cpu_user[at["a"]] == pytest.approx(125.0 / 4)
    assert f.cpu_total[at["slice"]] == pytest.approx(150.0)  # 3 s its own
    assert f.cpu_total[at["/"]] == pytest.approx(175.0)  # 10 s less a's 2.5 and slice's 4
    assert f.cpu_status[at["slice"], 1] == Code.UNREADABLE  # its own split is not known
    assert f.tasks_total == 11
    agg = Aggregator(metrics_for(SCREEN.counters), by=SeriesBy.CGROUP)
    snap = agg.update(f)
    assert series(snap, "tiptop_cpu_seconds_total")["a"] == pytest.approx(2.5)
    assert series(snap, "tiptop_cpu_seconds_total")["slice"] == pytest.approx(3.0)
    assert series(snap, "tiptop_tasks") == {"/": 5, "a": 3, "slice": 1, "slice/c": 2}


def test_a_leafs_events_count_from_their_baseline_and_never_an_inner_ones(tree: Path) -> None:
    source, tick = walker(tree, BUSY)
    f = refresh(source, tick)
    at = rows(f)
    assert (f.counter_status[at["a"]] == Code.OK).all()
    assert f.counter_scaled[at["a"]].tolist() == [8_000, 16_000]  # two CPUs' worth
    assert (f.counter_status[at["slice"]] == Code.NOT_COUNTED).all()  # absent, not 0
    assert (f.counter_status[at["/"]] == Code.NOT_COUNTED).all()
    snap = Aggregator(metrics_for(SCREEN.counters), by=SeriesBy.CGROUP).update(f)
    assert series(snap, "tiptop_cycles_total") == {"a": 8_000, "slice/c": 8_000}


def test_an_idle_leaf_is_not_read(tree: Path) -> None:
    """Events enabled for no time: none of its tasks ran, its cpu.stat is left unread
    (here it says 9 s more, which a read would have taken)."""
    source, tick = walker(tree, [([0, 0], 0, 0)])
    refresh(source, tick)
    write(tree, "/a", 10.0, 3)
    f = refresh(source, tick)
    assert f.cpu_total[rows(f)["a"]] == 0.0


def test_an_idle_leafs_processes_are_counted_on_its_turn(tree: Path) -> None:
    """A sleeping process moved in (it need not run) is counted within SWEEP refreshes,
    at the leaf's one turn among them."""
    source, tick = walker(tree, [([0, 0], 0, 0)])
    refresh(source, tick)
    write(tree, "/a", 1.0, 4)
    seen = []
    for _ in range(SWEEP):
        f = refresh(source, tick)
        assert f.processes is not None
        seen.append(int(f.processes[rows(f)["a"]]))
    assert seen.count(3) == SWEEP - len(seen[seen.index(4) :]) and seen[-1] == 4


def test_a_new_cgroup_is_found_and_counted_from_its_birth(tree: Path) -> None:
    source, tick = walker(tree, BUSY)
    refresh(source, tick)
    write(tree, "/d", 1.5, 2)
    f = refresh(source, tick)
    at = rows(f)
    assert f.processes is not None and int(f.processes[at["d"]]) == 2
    assert f.cpu_total[at["d"]] == pytest.approx(75.0)  # its 1.5 s since it was made
    assert (f.counter_status[at["d"]] == Code.NOT_COUNTED).all()  # its events opened now
    f = refresh(source, tick)
    assert (f.counter_status[rows(f)["d"]] == Code.NOT_COUNTED).all()  # their baseline
    f = refresh(source, tick)
    assert (f.counter_status[rows(f)["d"]] == Code.OK).all()


def test_a_removed_cgroups_last_row_is_dead_and_its_series_end(tree: Path) -> None:
    source, tick = walker(tree, BUSY)
    agg = Aggregator(metrics_for(SCREEN.counters), by=SeriesBy.CGROUP)
    agg.update(refresh(source, tick))
    shutil.rmtree(tree / "a")
    f = refresh(source, tick)
    i = rows(f)["a"]
    assert f.dead[i] and f.processes is not None and f.processes[i] == 0
    assert f.cpu_status[i, 0] == Code.UNREADABLE  # its CPU since its last read is lost
    snap = agg.update(f)  # its last counts, exported once more
    assert series(snap, "tiptop_tasks")["a"] == 0
    assert "a" in series(snap, "tiptop_cycles_total")
    f = refresh(source, tick)
    assert "a" not in rows(f)
    snap = agg.update(f)
    assert "a" not in series(snap, "tiptop_cpu_seconds_total")
    assert "a" not in series(snap, "tiptop_cycles_total")
    write(tree, "/a", 0.5, 1)  # made again: a new cgroup, a new series from its birth
    snap = agg.update(refresh(source, tick))
    assert series(snap, "tiptop_cpu_seconds_total")["a"] == pytest.approx(0.5)
    source.close()
    assert source.counters.fds_used == 0


def test_a_parent_read_short_of_its_children_owes_it_and_never_decreases(tree: Path) -> None:
    """/slice is read before /slice/c: its growth may come short of its child's by what
    the child ran in between; that is taken from its next growth, never exported below 0."""
    source, tick = walker(tree, BUSY)
    write(tree, "/slice", 2.5, 1)  # 0.5 s, its child 1 s
    write(tree, "/slice/c", 2.0, 2)
    f = refresh(source, tick)
    assert f.cpu_total[rows(f)["slice"]] == 0.0
    write(tree, "/slice", 4.5, 1)  # 2 s, its child 0.5 s: 1.5 s less the 0.5 owed
    write(tree, "/slice/c", 2.5, 2)
    f = refresh(source, tick)
    assert f.cpu_total[rows(f)["slice"]] == pytest.approx(50.0)
