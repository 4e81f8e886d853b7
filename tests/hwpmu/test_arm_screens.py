"""The Arm ``topdown`` and ``memory`` screens bound on a real or emulated Arm PMU.

Their counters name the PMU's ``events/`` aliases (tiptop/screens/builtin/arm.yaml), which the
kernel lists only for the common events the CPU's PMCEID registers announce
(drivers/perf/arm_pmuv3.c). The guest's emulated PMUv3 (QEMU ``-cpu cortex-a72``) implements
few: SW_INCR, INST_RETIRED (exact under ``-icount``) and CPU_CYCLES, plus STALL_FRONTEND,
STALL_BACKEND and STALL on PMUs of later architecture versions, which never fire. What is
expected counted is read here from sysfs directly (not through tiptop): an event listed is
counted, one not listed shows ``?`` with one line saying why, and nothing crashes. IPC is exact
in the guest (cycles = instructions x 2^shift), Minstr is K*N plus a small constant.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable

import numpy as np
import pytest

from tests.hwpmu.conftest import ICOUNT_SHIFT, IN_GUEST, REAL_PMU_RTOL, LoopMaker, count_once
from tiptop.cells import Status
from tiptop.screens.model import CounterSpec, NamedEvent, ScreenSpec

pytestmark = pytest.mark.hwpmu

DEVICES = "/sys/bus/event_source/devices"


def _cpu_pmu_events() -> set[str]:
    """The aliases under ``events/`` of every PMU with a ``cpus`` file (Arm's CPU PMUs)."""
    names: set[str] = set()
    for pmu in os.listdir(DEVICES):
        if os.path.isfile(os.path.join(DEVICES, pmu, "cpus")):
            d = os.path.join(DEVICES, pmu, "events")
            names.update(os.listdir(d) if os.path.isdir(d) else ())
    return names


def _run(
    screen_name: str, loop_children: LoopMaker, k: int, n: int
) -> tuple[ScreenSpec, np.ndarray, np.ndarray, list[str]]:
    """The built-in ``screen_name`` for this host, counting one ``kloop K N`` child by pid:
    (screen, its row's values, statuses, the sampler's messages)."""
    from tiptop.cli.screens import host_target
    from tiptop.screens import builtin_screens

    if platform.machine() != "aarch64":
        pytest.skip("Arm screens: this is not an arm64 machine")
    (screen,) = [s for s in builtin_screens(host_target()) if s.name == screen_name]
    frame, i, messages = count_once(screen, loop_children(k, n))
    return screen, frame.values[i], frame.status[i], messages


def _named(counter: CounterSpec) -> str:
    """The event name of a counter of the Arm screens (each is given by name)."""
    assert isinstance(counter.event, NamedEvent), counter
    return counter.event.name


def _expected(screen: ScreenSpec, have: set[str]) -> dict[str, bool]:
    """Per column header (after %CPU): whether every counter it reads is listed here."""
    from tiptop.screens import compile_column

    events = {c.alias: _named(c) for c in screen.counters}
    return {
        c.header.strip(): all(events[a] in have for a in compile_column(c.expr).aliases)
        for c in screen.columns[1:]
    }


def _check_columns(
    screen: ScreenSpec,
    values: np.ndarray,
    status: np.ndarray,
    messages: list[str],
    have: set[str],
    report: Callable[[str], None],
) -> dict[str, float | None]:
    """Counted columns are OK, the others '?' with a line naming each missing event."""
    expected = _expected(screen, have)
    shown: dict[str, float | None] = {}
    for j, (header, ok) in enumerate(expected.items(), start=1):
        if ok:
            assert status[j] == Status.OK, (header, status, messages)
            shown[header] = float(values[j])
        else:
            assert status[j] == Status.UNREADABLE, (header, status, messages)
            shown[header] = None
    for c in screen.counters:
        if _named(c) not in have:
            said = [m for m in messages if f"{_named(c)}: not an event of PMU" in m]
            assert len(said) == 1, (_named(c), messages)
    report(f"screen {screen.name!r} ({screen.desc}): {shown}; messages: {messages}")
    return shown


def test_arm_topdown_ipc_and_stalls(
    loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    """The Arm topdown variant binds; IPC = INST_RETIRED / CPU_CYCLES (1/2^shift exactly in the
    guest); the stall columns count where the PMU lists the events (0 under QEMU), else '?'."""
    k, n = 4, 3_000_000
    screen, values, status, messages = _run("topdown", loop_children, k, n)
    assert "Arm" in screen.desc, screen.desc
    have = _cpu_pmu_events()
    report(f"CPU PMU events listed in sysfs: {sorted(have)}")
    shown = _check_columns(screen, values, status, messages, have, report)
    if "IPC" in shown:  # the stall-cycles variant (every core but Neoverse V1, N2, V2)
        ipc = shown["IPC"]
        assert ipc is not None, messages
        if IN_GUEST:
            assert ipc == 1 / 2**ICOUNT_SHIFT
            assert all(v in (None, 0.0) for h, v in shown.items() if h != "IPC"), shown
        else:
            assert 0.05 < ipc < 10
    else:
        assert not IN_GUEST


def test_arm_memory_counts_instructions_and_marks_the_rest(
    loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    """The Arm memory screen binds; Minstr is the loop's K*N (exact up to the loop's fixed
    start-up instructions in the guest); cache and TLB columns count where the PMU lists their
    events (not in the guest: '?', with the reason), and are ratios >= 0 elsewhere."""
    k, n = 4, 3_000_000
    screen, values, status, messages = _run("memory", loop_children, k, n)
    assert "Arm" in screen.desc, screen.desc
    have = _cpu_pmu_events()
    shown = _check_columns(screen, values, status, messages, have, report)
    minstr = shown["Minstr"]
    assert minstr is not None, messages
    if IN_GUEST:
        assert 0 < minstr * 1e6 - k * n < 2000, minstr
        assert [h for h, v in shown.items() if v is None] == [
            "%L1DM",
            "L1DMPKI",
            "L2DMPKI",
            "LLMPKI",
            "DTLBMPKI",
        ], shown
    else:
        assert minstr == pytest.approx(k * n / 1e6, rel=REAL_PMU_RTOL)
        assert all(v is None or v >= 0 for v in shown.values()), shown
