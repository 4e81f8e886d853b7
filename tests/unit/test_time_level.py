"""Where a task's time went (issue 47), the parts that need no kernel: the time level of the
tree (tiptop/screens/timetree.py) on constructed shares, the bottleneck column and the tree
with it above the top-down tree (tiptop/screens/bottleneck.py), and ``--why``'s words
(tiptop/table/why.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import builders
from tiptop.cells import STATUS_DTYPE, Status
from tiptop.frame import Context, Frame, Pressure
from tiptop.screens import Target, builtin_screens
from tiptop.screens.bottleneck import OFFSET, parse_path
from tiptop.screens.columns import screen_columns
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.timetree import TIME_LABELS, UNKNOWN, time_level
from tiptop.screens.variables import RowFacts, TimeFacts
from tiptop.table.why import summary, task_tree, tree_lines, tree_record

OK, UNR = int(Status.OK), int(Status.UNREADABLE)
NAN = float("nan")


def level(
    run: float, wait: float, thr: float = 0.0, io: float = 0.0, threads: float = 1.0
) -> tuple[str, list[float]]:
    """The critical node's label and the five shares of one row, its parts given as
    fractions of the interval."""
    percent = 100.0 * np.array([[run, wait, thr, io]])
    status = np.zeros((1, 4), STATUS_DTYPE)
    got = time_level(percent, status, np.array([threads]))
    node = int(got.node[0])
    return (TIME_LABELS[node] if node >= 0 else str(node)), got.shares[0].tolist()


@pytest.mark.parametrize(
    ("parts", "node"),
    [
        # two CPU loops on one CPU: half on it, half waiting for it
        ((0.5, 0.5), "Wait"),
        # a 0.2 CPU limit: 20% on a CPU, the rest throttled
        ((0.2, 0.8, 0.78), "Throttled"),
        # waiting, but for its neighbours, not its limit: 30 of 60 throttled is not over half
        ((0.4, 0.6, 0.3), "Wait"),
        # sleeps 90% of the time: busy 10%, no bottleneck
        ((0.1, 0.0), "Sleep"),
        # fsync loop: 20% on a CPU, 50% blocked
        ((0.2, 0.05, 0.0, 0.5), "IO"),
        # both over: the larger wins (I/O)
        ((0.3, 0.2, 0.0, 0.4), "IO"),
        # both over and equal: Wait, the earlier node
        ((0.2, 0.3, 0.0, 0.3), "Wait"),
        # busy 30% and waiting for a fifth of it exactly: not over (the bound is strict)
        ((0.24, 0.06), "Run"),
        # a CPU loop alone: running
        ((0.98, 0.01), "Run"),
    ],
)
def test_the_critical_node_of_constructed_rows(parts: tuple[float, ...], node: str) -> None:
    assert level(*parts)[0] == node


def test_shares_and_sleep_of_a_process_sum_over_its_threads() -> None:
    """4 threads over 1 s: one busy thread (0.9 s on a CPU, 0.1 s waiting), three asleep:
    running 90%, waiting 10%, asleep 300%; busy 1 CPU's worth: running, not asleep."""
    node, shares = level(0.9, 0.1, threads=4)
    assert node == "Run"
    assert shares == pytest.approx([90.0, 10.0, 0.0, 0.0, 300.0])


def test_unknown_time_is_unknown_and_io_unknown_stays_in_sleep() -> None:
    percent = np.array([[NAN, NAN, NAN, NAN], [5.0, 0.0, 0.0, NAN]])
    status = np.array([[UNR] * 4, [OK, OK, OK, UNR]], STATUS_DTYPE)
    got = time_level(percent, status, np.ones(2))
    assert got.node.tolist() == [UNKNOWN, TIME_LABELS.index("Sleep")]
    assert np.isnan(got.shares[0]).all() and not got.over[0].any()
    assert np.isnan(got.shares[1, 3]) and got.shares[1, 4] == pytest.approx(95.0)
    assert got.io_known.tolist() == [False, False]


# --------------------------------------------------------------------- the bottleneck column

ZEN4 = builtin_screens(Target("x86", "19_11"))
TD = next(s for s in ZEN4 if s.name == "topdown")
STATE = next(s for s in ZEN4 if s.name == "state")
#: The Zen 4 tree's labels, by their place in it (a cell's node is past the time level's).
TD_LABEL_INDEX = {lab: i for i, lab in enumerate(screen_columns(TD)[-1].labels[OFFSET:])}


def zen4_cells(time: TimeFacts | None, n: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Zen 4 level 1 of ``n`` rows: back end 45%, front end 20%, retiring 25%, bad
    speculation 5%, SMT 5% of slots (back end is the top-down bottleneck), over ``time``."""
    counts = {"CYC": 1e9, "RET": 1.5e9, "DISP": 1.8e9, "FE": 1.2e9, "BE": 2.7e9, "SMT": 0.3e9}
    aliases = [c.alias for c in TD.counters]
    d = np.array([[counts.get(a, 0.0) for a in aliases]] * n)
    st = np.zeros(d.shape, STATUS_DTYPE)
    z = np.zeros(n)
    facts = RowFacts(np.full(n, 99.0), z, z, z, 1.0, st[:, 0], st[:, 0], time=time)
    cells = Evaluator(TD, aliases).evaluate(facts, CounterCells(d, st, d, st, np.ones(d.shape)))
    j = [c.header.strip() for c in TD.columns].index("BOTTLENECK")
    return cells.node[:, j], cells.values[:, j]


def times(rows: list[list[float]], threads: float = 1.0) -> TimeFacts:
    """Rows of parts given as fractions of the interval (NaN: unknown)."""
    percent = 100.0 * np.array(rows, float)
    status = np.where(np.isnan(percent), UNR, OK).astype(STATUS_DTYPE)
    n = len(rows)
    return TimeFacts(percent, status, np.full(n, threads), np.full(n, NAN), np.full(n, NAN))


def test_the_column_starts_from_the_time_level() -> None:
    labels = screen_columns(TD)[-1].labels
    rows = [
        [0.97, 0.02, 0.0, 0.0],  # running: the top-down tree's node
        [0.5, 0.5, 0.0, 0.0],  # waiting for a CPU
        [0.2, 0.8, 0.78, 0.0],  # throttled
        [0.05, 0.0, 0.0, 0.0],  # asleep: no node
        [NAN] * 4,  # unknown: the top-down tree decides, as before the time level
    ]
    node, value = zen4_cells(times(rows), len(rows))
    got = [labels[k] if k >= 0 else "-" for k in node.tolist()]
    assert got == ["BE", "Wait", "Throttled", "-", "BE"]
    assert value.tolist() == pytest.approx([45.0, 50.0, 78.0, 0.0, 45.0])
    assert node[0] == OFFSET + TD_LABEL_INDEX["BE"]
    # without any time facts (a recording made before them): the top-down node, as before
    old_node, old_value = zen4_cells(None)
    assert labels[int(old_node[0])] == "BE" and old_value[0] == pytest.approx(45.0)


def test_the_state_screen_has_the_time_level_alone() -> None:
    spec = parse_path("bottleneck(time)")
    assert spec.tree is None and spec.labels == TIME_LABELS
    aliases = [c.alias for c in STATE.counters]
    n = 2
    d = np.zeros((n, len(aliases)))
    st = np.zeros(d.shape, STATUS_DTYPE)
    z = np.zeros(n)
    t = times([[0.96, 0.01, 0.0, 0.0], [0.3, 0.0, 0.0, 0.6]])
    facts = RowFacts(np.full(n, 96.0), z, z, z, 1.0, st[:, 0], st[:, 0], time=t)
    cells = Evaluator(STATE, aliases).evaluate(facts, CounterCells(d, st, d, st, np.ones(d.shape)))
    j = len(STATE.columns) - 1
    assert [TIME_LABELS[k] for k in cells.node[:, j].tolist()] == ["Run", "IO"]
    assert cells.values[:, j].tolist() == pytest.approx([96.0, 60.0])
    assert cells.status[:, j].tolist() == [OK, OK]


# --------------------------------------------------------------------- --why's words

CONTEXT = Context(2, 9, 0.0, (Pressure("cpu", 0.4, 0.0),))


def state_frame(time: list[float], **row: float) -> Frame:
    aliases = [c.alias for c in STATE.counters]
    d = np.zeros((1, len(aliases)))
    st = np.zeros(d.shape, STATUS_DTYPE)
    z = np.zeros(1)
    threads = row.pop("threads", 1.0)
    t = times([time], threads)
    facts = RowFacts(np.full(1, 50.0), z, z, z, 1.0, st[:, 0], st[:, 0], time=t)
    cells = Evaluator(STATE, aliases).evaluate(facts, CounterCells(d, st, d, st, np.ones(d.shape)))
    frame = builders.frame(
        [
            {
                "tid": 4242,
                "name": "loop",
                "cells": cells.values[0].tolist(),
                "status": cells.status[0].tolist(),
                "node": cells.node[0].tolist(),
                "time": [100.0 * x for x in time],
                "threads": threads,
            }
        ],
        STATE,
    )
    frame.context = CONTEXT
    for key, value in row.items():
        getattr(frame, key)[0] = value
    return frame


@pytest.mark.parametrize(
    ("time", "row", "words"),
    [
        ([0.5, 0.5, 0.0, 0.0], {}, "waiting for a CPU 50% of its time: 2 CPUs, 9 runnable"),
        (
            [0.5, 0.5, 0.0, 0.0],
            {"cpus_allowed": 1.0},
            "waiting for a CPU 50% of its time: it may run on 1 of 2 CPUs, 9 runnable",
        ),
        (
            [0.2, 0.8, 0.78, 0.0],
            {"cpu_limit": 0.2},
            "throttled by its cgroup's CPU limit (0.2 CPU): 78% of its time",
        ),
        ([0.1, 0.0, 0.0, 0.0], {}, "asleep 90% of its time: no bottleneck"),
        ([0.1, 0.0, 0.0, NAN], {}, "asleep or blocked on I/O 90% of its time: no bottleneck"),
        ([0.2, 0.05, 0.0, 0.5], {}, "blocked on I/O 50% of its time"),
        ([0.96, 0.01, 0.0, 0.0], {}, "running 96% of its time"),
        (
            [1.5, 0.5, 0.0, 0.0],
            {"threads": 4.0},
            "waiting for a CPU 50% (its 4 threads' time summed): 2 CPUs, 9 runnable",
        ),
    ],
)
def test_why_says_it_in_words(time: list[float], row: dict[str, float], words: str) -> None:
    tree = task_tree(state_frame(time, **row), STATE, 4242)
    assert tree is not None and tree.timed
    assert summary(tree) == words
    lines = tree_lines(tree)
    assert lines[0] == f"PID 4242 (loop): {words}"
    assert lines[1] == "   machine: 2 CPUs, 9 runnable, steal 0.0%, cpu pressure 40.0/0.0%"
    assert [ln.split("%")[0].replace("*", "").split()[0] for ln in lines[2:]] == list(TIME_LABELS)
    rec = tree_record(tree)
    assert rec["words"] == words and rec["context"]["runnable"] == 9  # type: ignore[index]


def test_bounds_and_ties_up_to_float_rounding() -> None:
    """As the top-down tree's (``topdown.exceeds``): a wait a fifth of the busy time
    computed with rounding error is at its bound, not over it; I/O equal to the wait up to
    rounding is a tie, which goes to Wait."""
    # waiting 0.275 of 0.911 + 0.275 + 0.189 busy: a fifth exactly, 27.500000000000004 > 27.5
    assert level(0.911, 0.275, 0.0, 0.189)[0] == "Run"
    assert level(0.2, 0.3 + 1e-12, 0.0, 0.3)[0] == "Wait"
