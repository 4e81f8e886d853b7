"""Absent, not zero (issue 31): a counter series exists only for label sets some of whose
tasks read that counter; an event nobody could count has no series at all, and
``tiptop_event_read_ok`` says so (tiptop/exporter/aggregate.py)."""

from __future__ import annotations

from tests.support.builders import frame
from tests.unit.test_exporter import SCHED, rows, sample
from tiptop.cells import Status
from tiptop.choices import SeriesBy
from tiptop.exporter.aggregate import OTHER, Aggregator, metrics_for
from tiptop.frame import Frame

#: SCHED's counters: TC, CS, PF (software), then C, I (hardware).
HARDWARE = (3, 4)


def no_pmu(f: Frame) -> Frame:
    """``f`` as a machine without a PMU reads it: the hardware counters unreadable, their
    running fraction unknown (as ``engine.readout`` gives them)."""
    f.counter_status[:, HARDWARE] = Status.UNREADABLE
    f.counter_running[:, HARDWARE] = float("nan")
    return f


def test_an_event_nobody_counts_has_no_series() -> None:
    agg = Aggregator(metrics_for(SCHED.counters))
    snap = agg.update(
        no_pmu(frame(rows((1, "a", 5.0, [9, 1, 2, 0, 0]), (2, "b", 5.0, [9, 1, 3, 0, 0])), SCHED))
    )
    names = {f.name for f in snap.families}
    assert "tiptop_cycles_total" not in names and "tiptop_instructions_total" not in names
    assert sample(snap, "tiptop_page_faults_total") == {
        ("a", "root", "/"): 2,
        ("b", "root", "/"): 3,
    }
    ok = sample(snap, "tiptop_event_read_ok")
    assert ok[("cycles", "a", "root", "/")] == 0 and ok[("page_faults", "a", "root", "/")] == 1
    running = sample(snap, "tiptop_event_running_ratio")
    assert ("cycles", "a", "root", "/") not in running  # unknown, not 0 or 1


def test_an_event_counted_for_some_tasks_only_has_their_series() -> None:
    agg = Aggregator(metrics_for(SCHED.counters))
    f = frame(rows((1, "a", 5.0, [1, 1, 1, 7, 8]), (2, "b", 5.0, [1, 1, 1, 0, 0])), SCHED)
    f.counter_status[1, HARDWARE] = Status.NOT_COUNTED  # b's group never got the PMU
    snap = agg.update(f)
    assert sample(snap, "tiptop_cycles_total") == {("a", "root", "/"): 7}
    assert sample(snap, "tiptop_event_read_ok")[("cycles", "b", "root", "/")] == 0
    # Once counted, a total stays (a series that came and went would read as a reset).
    snap = agg.update(no_pmu(frame(rows((1, "a", 5.0, [1, 1, 1, 0, 0])), SCHED)))
    assert sample(snap, "tiptop_cycles_total") == {("a", "root", "/"): 7}
    f = frame(rows((2, "b", 5.0, [1, 1, 1, 2, 3])), SCHED)  # b read it at last: from 2
    assert sample(agg.update(f), "tiptop_cycles_total") == {
        ("a", "root", "/"): 7,
        ("b", "root", "/"): 2,
    }


def test_the_summed_series_has_every_label() -> None:
    for cmdline, width in ((False, 4), (True, 5)):
        agg = Aggregator(metrics_for(SCHED.counters), by=SeriesBy.PID, top=1, cmdline=cmdline)
        snap = agg.update(
            frame(rows((1, "a", 9.0, [1, 1, 1, 1, 1]), (2, "b", 1.0, [1, 1, 4, 1, 1])), SCHED)
        )
        faults = sample(snap, "tiptop_page_faults_total")
        assert faults[(OTHER,) * width] == 4
        for fam in snap.families:
            for key, _value in fam.samples:
                labels = dict(zip(fam.labels, key, strict=True))
                labels.pop("event", None)
                if labels.get("pid") == OTHER:
                    assert set(labels.values()) == {OTHER}, (fam.name, labels)
