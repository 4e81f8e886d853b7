"""The self-test's pure parts: the kernels' bytes, the exact fit, the verdicts, the exit status.

The machine code is checked against encodings from the architecture manuals (Intel SDM vol. 2:
``dec r8`` = 49 FF C8, ``jnz rel8`` = 75 cb; Arm ARM: ``subs x9, x9, #1`` = F1000529,
``b.ne`` = 54000001 | imm19 << 5), so that a slip in a byte cannot pass unnoticed.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.builders import screen
from tiptop.errors import EventUnsupported
from tiptop.kernel import Attr
from tiptop.kernel.backend import Group
from tiptop.selftest.checks import (
    CHECKS,
    SIZES,
    Check,
    Row,
    Verdict,
    exit_code,
    fit,
    judge,
    pick_run,
    summary,
)
from tiptop.selftest.code import KERNELS, kernel_code
from tiptop.selftest.report import format_json, format_text, run_selftest, selftest_screen
from tiptop.vocab import HwId, PerfType, SwId


def _frame_len(arch: str) -> int:
    return len(kernel_code(arch, "loop")) - (5 if arch == "x86_64" else 8)


def test_x86_loop_body_is_dec_jnz() -> None:
    """The x86-64 loop: ``dec r8; jnz -5`` between the two syscall pairs, 2 instructions."""
    code = kernel_code("x86_64", "loop")
    body = bytes.fromhex("49ffc8 75fb")
    assert code.count(body) == 1
    assert code.endswith(bytes.fromhex("0f05 58 5b c3"))  # syscall; pop rax; pop rbx; ret
    assert code.count(bytes.fromhex("0f05")) == 4  # ready, wait, done, wait


def test_aarch64_loop_body_is_subs_bne() -> None:
    """The aarch64 loop: ``subs x9, x9, #1; b.ne -1``, then the frame's last syscalls."""
    code = kernel_code("aarch64", "loop")
    words = [int.from_bytes(code[i : i + 4], "little") for i in range(0, len(code), 4)]
    k = words.index(0xF1000529)
    assert words[k + 1] == 0x54FFFFE1  # b.ne back one instruction
    assert words.count(0xD4000001) == 4  # svc #0: ready, wait, done, wait
    assert words[-1] == 0xD65F03C0  # ret


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_kernel_shares_the_frame(arch: str) -> None:
    """Every kernel is the loop's frame plus its own body: same prologue and epilogue."""
    loop = kernel_code(arch, "loop")
    for name in KERNELS:
        code = kernel_code(arch, name)
        assert code[:40] == loop[:40] and code[-24:] == loop[-24:], name
        assert len(code) > _frame_len(arch)


def test_aarch64_backward_branches_land_on_their_label() -> None:
    """Each kernel's last ``b.ne`` goes back to the body's first instruction."""
    code = kernel_code("aarch64", "touch")
    words = [int.from_bytes(code[i : i + 4], "little") for i in range(0, len(code), 4)]
    store = words.index(0x3900018D)  # strb w13, [x12]
    bne = max(i for i, w in enumerate(words) if w & 0xFF00001F == 0x54000001)
    imm19 = (words[bne] >> 5) & 0x7FFFF
    assert bne + (imm19 - (1 << 19)) == store


def test_unknown_arch_has_no_code() -> None:
    with pytest.raises(KeyError):
        kernel_code("riscv64", "loop")


def test_fit_is_exact() -> None:
    """A line 2n + 58 gives slope exactly 2 and intercept exactly 58 (no float rounding)."""
    xs = [1_000_003, 2_000_011, 4_000_037, 8_000_053]
    f = fit(xs, [2.0 * x + 58 for x in xs])
    assert f.slope == Fraction(2) and f.intercept == Fraction(58) and f.r2 == 1.0
    g = fit(xs, [2.0 * x + 58 + (1 if x == xs[2] else 0) for x in xs])
    assert g.slope != 2 and g.r2 < 1.0


def _judged(
    per_iter: Fraction | None,
    counts: list[float],
    ref: list[float] | None = None,
    tol: float = 0.005,
) -> Row:
    row = Row("A", "instructions")
    sizes = [100, 200, 400, 800]
    judge(row, Check("loop", per_iter, tol, "test"), sizes, counts, ref or [0.0] * 4)
    return row


def test_verdicts() -> None:
    """exact, within the tolerance (signed %), off by X%, not counting."""
    sizes = [100, 200, 400, 800]
    assert _judged(Fraction(2), [2 * n + 7 for n in sizes]).kind == "exact"
    w = _judged(Fraction(2), [2.004 * n + 7 for n in sizes])
    assert (w.kind, w.verdict) == ("within", "within 0.5% (+0.200%)")
    o = _judged(Fraction(2), [2.2 * n for n in sizes])
    assert (o.kind, o.verdict) == ("off", "off by +10.00%")
    assert _judged(Fraction(2), [0.0] * 4).kind == "not counting"


def test_cpu_time_reference() -> None:
    """task-clock is judged against the slope of the child's CPU time per iteration."""
    sizes = [100, 200, 400, 800]
    r = _judged(None, [3.0 * n + 5 for n in sizes], ref=[3.03 * n for n in sizes], tol=0.05)
    assert r.kind == "within" and r.predicted == pytest.approx(3.03)
    bad = _judged(None, [3.0 * n for n in sizes], ref=[math.nan] * 4)
    assert bad.kind == "unchecked"


def test_exit_codes_and_summary() -> None:
    """0 all good; 1 any off or not counting; 2 nothing checked at all."""
    good, off, na = (
        Row("a", "x", kind=Verdict.EXACT),
        Row("b", "y", kind=Verdict.OFF),
        Row("c", "z"),
    )
    assert exit_code([good, na]) == 0
    assert exit_code([good, off]) == 1
    assert exit_code([na, Row("d", "w", kind=Verdict.UNSUPPORTED)]) == 2
    # the software events added beside a screen (st-*) do not make the screen checked
    extra = Row("st-page-faults", "page-faults", kind=Verdict.EXACT)
    assert exit_code([Row("d", "w", kind=Verdict.UNSUPPORTED), extra]) == 2
    assert exit_code([good, extra]) == 0 and exit_code([extra]) == 0
    assert "nothing of the screen checked (1 of its events" in summary(
        [Row("d", "w", kind=Verdict.UNSUPPORTED), extra], 2
    )
    assert summary([good, off, na], 1).startswith("selftest: 1 good, 1 off, 0 unsupported")


def test_checks_cover_the_promised_events() -> None:
    hw, sw = int(PerfType.HARDWARE), int(PerfType.SOFTWARE)
    assert CHECKS[(hw, HwId.INSTRUCTIONS)].per_iter == 2
    assert CHECKS[(hw, HwId.BRANCH_MISSES)].tolerance == 0.10
    assert CHECKS[(sw, SwId.PAGE_FAULTS)].kernel == "touch"
    assert set(SIZES) == set(KERNELS)


def test_screen_gains_the_software_events_it_lacks() -> None:
    s = screen("s", counters={"PF": "page-faults", "I": "instructions"})
    names = [c.alias for c in selftest_screen(s, "/sys").counters]
    assert names == ["PF", "I", "st-task-clock", "st-context-switches"]


class _Refusing:
    """A backend where nothing opens (a machine without perf events at all)."""

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> Group:
        raise EventUnsupported(errno.ENOENT, "No such file or directory")

    def read_leaders(self, fds: Sequence[int], nbytes: int) -> list[bytes]:
        raise AssertionError("no group opened, none to read")

    def open_pidfd(self, tid: int, thread: bool) -> int | None:
        return None

    def run_times(self, pids: Sequence[int]) -> list[int]:
        return [0] * len(pids)

    def open_from(self, cpu: int | None) -> None:
        pass


def test_nothing_opens_exit_2_with_reasons(tmp_path: Path) -> None:
    """No event opens: no child is started, every row says why, exit 2."""
    host = host_at(str(tmp_path), str(tmp_path), paranoid=2, euid=1000, capabilities=0)
    rows = run_selftest(screen("d", counters={"I": "instructions"}), host, _Refusing())
    assert [r.kind for r in rows] == ["unsupported"] * 4
    assert all("ENOENT" in r.verdict or "paranoid" in r.verdict for r in rows), rows
    assert exit_code(rows) == 2
    text = format_text("d", rows, 2)
    assert text.splitlines()[-1].endswith("nothing checked (exit 2)")
    assert '"exit": 2' in format_json("d", rows, 2)


def test_chase_ring_is_one_cycle_through_every_line() -> None:
    """The pointer-chase ring: from the first line, following the stored addresses visits
    every cache line once and comes back (one cycle: every load depends on the previous)."""
    import ctypes

    from tiptop.selftest.child import ring
    from tiptop.selftest.code import LINE

    m = ring(8192)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    words = (ctypes.c_uint64 * (8192 // 8)).from_buffer(m)
    seen, at = [], base
    for _ in range(8192 // LINE):
        seen.append((at - base) // LINE)
        at = words[(at - base) // 8]
    assert at == base and sorted(seen) == list(range(8192 // LINE))
    assert seen[:4] != [0, 1, 2, 3]  # shuffled, not a stride a prefetcher would follow
    del words


def test_pick_run_keeps_count_and_cpu_time_of_one_run() -> None:
    """Of three runs of a size: the median by count for an exact check; for task-clock the
    median run by excess over its own CPU time, so a run on a slower CPU (both higher), a
    run with a steal burst (the count alone higher) and a run whose excess came out
    negative never mix or win."""
    exact = CHECKS[(int(PerfType.SOFTWARE), SwId.PAGE_FAULTS)]
    assert pick_run(exact, [(12.0, 1.0), (10.0, 9.0), (11.0, math.nan)]) == 2
    clock = CHECKS[(int(PerfType.SOFTWARE), SwId.TASK_CLOCK)]
    runs = [(4.8, 4.0), (4.5, 4.4), (4.2, 4.25)]  # 0.8 over (a burst), 0.1 over, 0.05 under
    assert pick_run(clock, runs) == 1
    assert pick_run(clock, [(4.2, 4.2), (4.4, math.nan), (4.0, 4.0)]) == 1


def test_cpu_time_off_under_steal_is_unchecked_not_off() -> None:
    """task-clock over by no more than the host stole during the runs: not checked, saying
    so (exit 0); over by more than the steal, under, or without steal: off."""
    sizes = [100, 200, 400, 800]
    ts, ref = [3.3 * n for n in sizes], [3.0 * n for n in sizes]  # 450 ns over in all
    clock = CHECKS[(int(PerfType.SOFTWARE), SwId.TASK_CLOCK)]
    r = Row("TC", "task-clock")
    judge(r, clock, sizes, ts, ref, steal_ns=20e6)
    assert r.kind == "unchecked" and r.steal_ms == 20.0, r
    assert r.verdict.startswith("not checked: off by +10.00% while the host stole 20 ms"), r
    assert exit_code([r, Row("PF", "page-faults", kind=Verdict.EXACT)]) == 0
    for counts, steal in ((ts, 449.0), (ts, 0.0), ([2.7 * n for n in sizes], 20e6)):
        judge(r, clock, sizes, counts, ref, steal_ns=steal)
        assert r.kind == "off" and r.verdict.startswith("off by "), (steal, r)
