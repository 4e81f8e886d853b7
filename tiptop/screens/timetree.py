"""The time level of the bottleneck tree: where a task's whole time went, above the
vendors' top-down trees (tiptop/screens/topdown.py), which explain only the time it runs.

Data and one vectorised walk; pure. Its nodes split a task's time (docs/screens.md, "Where
the time goes"): *Run* (on a CPU: the top-down tree splits this part where a PMU counts),
*Wait* (runnable, on a run queue waiting for a CPU), beneath it *Throttled* (of that wait,
held by its cgroup's CPU limit), *IO* (blocked on block I/O) and *Sleep* (the rest: waiting
by choice, for a timer, a lock, a pipe, the network). Their shares are the ``TIME_*``
variables (tiptop/screens/variables.py): % of the interval, a process's summed over its
threads.

*Reading* (Brendan Gregg's thread state analysis, the TSA method of "Systems Performance",
2nd ed.: find the state a thread spends its time in, then the tool for that state; his USE
method reads run-queue latency as the CPU's saturation). A task asleep more than
:data:`SLEEP_BOUND` of the time (*busy*: on a CPU, waiting for one or blocked on I/O, less
than the rest) slept by choice: no bottleneck. Otherwise the critical node is the larger of
Wait and IO when it is over its bound, a part of the busy time (:data:`WAIT_BOUND`,
:data:`IO_BOUND`); beneath Wait, Throttled when the cgroup's limit held more than
:data:`THROTTLED_BOUND` of the wait (the wait is then the task's own limit, not its
neighbours': kguardian PR#1531's point). Else the task was running, and the top-down tree
below says how well. Ties go to the earlier node (Wait before IO), as toplev breaks them;
every bound and tie is compared as the top-down tree's are, up to float rounding
(``topdown.exceeds``).

*Bounds.* A part of the busy time, not of the interval, so that a task busy 30% of the time
and waiting for half of it is flagged as one busy 100% and waiting half. A fifth is
perf's bound for a level-1 top-down category (``tma_backend_bound > 0.2``,
tiptop/screens/topdown.py): a part that large is worth its own tool. A task busy less than
15% of one CPU's time (asleep 85%) is idle in the sense of ``top``'s idle filter and
Gregg's idle state.
"""

from __future__ import annotations

import numpy as np

from tiptop.cells import Code
from tiptop.readonly import readonly
from tiptop.screens.topdown import exceeds
from tiptop.screens.variables import IO, RUN, THROTTLED, WAIT

__all__ = [
    "IO_BOUND",
    "SLEEP_BOUND",
    "THROTTLED_BOUND",
    "TIME_ADVICE",
    "TIME_LABELS",
    "UNKNOWN",
    "WAIT_BOUND",
    "TimeLevel",
    "time_level",
]

#: The time level's nodes, in tree order; a bottleneck cell's node indexes them first.
TIME_LABELS = ("Run", "Wait", "Throttled", "IO", "Sleep")
RUN_NODE, WAIT_NODE, THROTTLED_NODE, IO_NODE, SLEEP_NODE = range(len(TIME_LABELS))
#: Each node's parent in :data:`TIME_LABELS` (-1: the root).
TIME_PARENTS = (-1, -1, WAIT_NODE, -1, -1)
#: A row whose time is not known (no ``schedstat``, a recording made without it).
UNKNOWN = -2

#: A task asleep more than this part of the interval (busy less than the rest, in one
#: CPU's time) slept by choice: no bottleneck.
SLEEP_BOUND = 0.85
#: Waiting for a CPU more than this part of its busy time: Wait.
WAIT_BOUND = 0.2
#: Of its wait, held by its cgroup's CPU limit more than this part: Throttled.
THROTTLED_BOUND = 0.5
#: Blocked on block I/O more than this part of its busy time: IO.
IO_BOUND = 0.2

#: Per node: what it means, and what usually helps (sources: the module doc, the kernel's
#: Documentation/scheduler/sched-bwc.rst and Documentation/accounting/delay-accounting.rst).
TIME_ADVICE: dict[str, tuple[str, str]] = {
    "Run": (
        "on a CPU",
        "the top-down tree says how well it runs; --where says in which functions",
    ),
    "Wait": (
        "runnable, waiting on a run queue for a CPU",
        "more CPUs, fewer runnable tasks beside it, or a higher priority (nice, cpu.weight)",
    ),
    "Throttled": (
        "held by its cgroup's CPU limit (its quota per period was used up)",
        "raise the limit (cpu.max, a container's --cpus), or make it need less CPU",
    ),
    "IO": (
        "blocked on block I/O (disk reads, writes, fsync)",
        "fewer or larger I/Os, page cache, async I/O; iostat or biolatency for the device",
    ),
    "Sleep": (
        "asleep by choice: a timer, a lock, a pipe, the network",
        "nothing is slowing it down here; --where with off-CPU time says where it sleeps",
    ),
}


@readonly
class TimeLevel:
    """The time level of each row: its parts in % of the interval (NaN where unknown), which
    are over their bounds, and its critical node (an index in :data:`TIME_LABELS`, or
    :data:`UNKNOWN`)."""

    #: float64 ``(n, 5)``: Run, Wait, Throttled, IO, Sleep in % of the interval.
    shares: np.ndarray
    #: bool ``(n, 5)``: over its bound (Run: the critical node when no other is).
    over: np.ndarray
    #: int ``(n,)``.
    node: np.ndarray
    #: bool ``(n,)``: the row's I/O is known (delay accounting on); where not, Sleep holds it.
    io_known: np.ndarray


def time_level(percent: np.ndarray, status: np.ndarray, threads: np.ndarray) -> TimeLevel:
    """The time level of rows whose parts (``TimeFacts.percent`` and ``status``: run,
    wait, throttled, I/O in % of the interval) cover ``threads`` threads: see the module
    doc for the rules."""
    n = len(percent)
    known = (status[:, RUN] == Code.OK) & (status[:, WAIT] == Code.OK)
    io_known = status[:, IO] == Code.OK
    part = np.where((status == Code.OK) & known[:, None], percent, 0.0)
    run, wait, thr = part[:, RUN], part[:, WAIT], part[:, THROTTLED]
    io = np.where(io_known, part[:, IO], 0.0)
    busy = run + wait + io
    sleep = np.maximum(100.0 * threads - busy, 0.0)
    shares = np.stack([run, wait, thr, io, sleep], axis=1)
    shares[~known] = np.nan
    shares[~io_known, IO_NODE] = np.nan
    shares[(status[:, THROTTLED] != Code.OK), THROTTLED_NODE] = np.nan
    over = np.zeros((n, len(TIME_LABELS)), bool)
    over[:, SLEEP_NODE] = exceeds(100.0 * (1.0 - SLEEP_BOUND), busy)
    over[:, WAIT_NODE] = exceeds(wait, WAIT_BOUND * busy)
    over[:, THROTTLED_NODE] = over[:, WAIT_NODE] & exceeds(thr, THROTTLED_BOUND * wait)
    over[:, IO_NODE] = exceeds(io, IO_BOUND * busy)
    waits = over[:, WAIT_NODE] & (~over[:, IO_NODE] | ~exceeds(io, wait))
    node = np.full(n, RUN_NODE)
    node = np.where(over[:, IO_NODE] & ~waits, IO_NODE, node)
    node = np.where(waits, np.where(over[:, THROTTLED_NODE], THROTTLED_NODE, WAIT_NODE), node)
    node = np.where(over[:, SLEEP_NODE], SLEEP_NODE, node)
    over[:, RUN_NODE] = node == RUN_NODE
    over[~known] = False
    node = np.where(known, node, UNKNOWN)
    return TimeLevel(shares, over, node, io_known & known)
