"""Exact instruction counts through tiptop's own kernel layer (``tiptop.kernel``), attached by pid.

A child runs a loop of exactly K instructions per iteration (kloop.c); the counters are opened
on its pid from outside while it is blocked, as a top user's monitor would (perf_event_open(2):
``pid > 0, cpu == -1`` measures that task on any CPU). Over several sizes N the count must be
``K*N + c``: in the emulated-PMU guest the least-squares slope is exactly K and the residuals
are zero (c constant); on a real PMU, within 1%.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hwpmu.conftest import ICOUNT_SHIFT, IN_GUEST, REAL_PMU_RTOL, LoopMaker, fit

pytestmark = pytest.mark.hwpmu

# PERF_TYPE_HARDWARE configs (include/uapi/linux/perf_event.h).
HW_CPU_CYCLES, HW_INSTRUCTIONS = 0, 1
SIZES = [100_000, 300_000, 1_000_000, 2_000_000, 5_000_000]


def _count(make: LoopMaker, k: int, n: int) -> tuple[int, int, int, int]:
    """(instructions, cycles, enabled, running) deltas of one ``kloop k n`` run, by pid."""
    from tiptop.kernel import Attr, PerfBackend

    child = make(k, n)
    group = PerfBackend().open_group(
        child.pid, [Attr(type=0, config=HW_INSTRUCTIONS), Attr(type=0, config=HW_CPU_CYCLES)]
    )
    try:
        r0 = group.read()
        child.go()
        child.wait_done()
        r1 = group.read()
    finally:
        group.close()
        child.finish()
    d = [int(b) - int(a) for a, b in zip(r0.values, r1.values, strict=True)]
    return (
        d[0],
        d[1],
        r1.time_enabled - r0.time_enabled,
        r1.time_running - r0.time_running,
    )


@pytest.mark.parametrize("k", [4, 7])
def test_perf_slope_is_k_by_pid(
    k: int, loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    """Least squares over 5 sizes: slope K, constant intercept (exact in the guest)."""
    counts = [_count(loop_children, k, n) for n in SIZES]
    ins = [c[0] for c in counts]
    slope, intercept, resid = fit(SIZES, ins)
    report(
        f"perf by pid, K={k}: slope={slope:.6f} intercept={intercept:.1f} "
        f"max_residual={resid:.2f} counts={ins}"
    )
    for _, _, enabled, running in counts:
        assert enabled == running > 0  # two events, plenty of counters: never multiplexed
    if IN_GUEST:
        consts = {i - k * n for i, n in zip(ins, SIZES, strict=True)}
        assert len(consts) == 1, f"intercept not constant: {consts}"
        (c,) = consts
        assert 0 < c < 2000, c  # syscall return paths + the call into the loop
        assert round(slope, 6) == k
    else:
        assert slope == pytest.approx(k, rel=REAL_PMU_RTOL)
        assert resid < REAL_PMU_RTOL * k * SIZES[-1]


def test_perf_cycles_per_instruction_ipc(
    loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    """cycles / instructions: exactly 2^shift in the guest (-icount makes cycles the virtual
    clock, 2^shift ns per instruction); merely positive and plausible on a real PMU."""
    n = 2_000_000
    ins, cyc, _, _ = _count(loop_children, 4, n)
    report(f"perf by pid, K=4 N={n}: instructions={ins} cycles={cyc} IPC={ins / cyc:.6f}")
    if IN_GUEST:
        assert cyc == ins * 2**ICOUNT_SHIFT
    else:
        assert 0.05 < ins / cyc < 10
