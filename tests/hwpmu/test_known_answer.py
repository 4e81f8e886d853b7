"""Known-answer kernels: the instructions slope of each is its exact count per iteration.

Every kernel of the self-test with a known instruction count (``tiptop.selftest.code
.INSTRUCTIONS``: the loop, the two-branch loop, the divide chain, the tight add loop, the
pointer chase, the page toucher) is counted through tiptop's engine by pid
(tests/support/known_answer.py, as ``tiptop --selftest`` counts) at four sizes. In the
emulated-PMU guest (exact user-mode instruction counts) the least-squares slope must be the
table's count exactly; on a real PMU within 0.5%. The rest of the known-answer validation
(branches, top-down fractions, L1 misses, perf stat) needs events the guest does not emulate:
tests/system/test_known_answer.py, docs/selftest.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from fractions import Fraction

import pytest

from tests.hwpmu.conftest import IN_GUEST
from tests.support.builders import screen
from tests.support.known_answer import Engine, Series
from tiptop.selftest.checks import SIZES, fit
from tiptop.selftest.code import INSTRUCTIONS
from tiptop.selftest.measure import KernelChild

pytestmark = pytest.mark.hwpmu

ARCH = os.uname().machine
#: Kernels checked. In the guest the 16 MiB ring of ``chase_large`` (the same code as
#: ``chase_small``) is left out: building it in interpreted Python under TCG takes minutes.
KERNELS = sorted(k for k in INSTRUCTIONS.get(ARCH, {}) if not (IN_GUEST and k == "chase_large"))


@pytest.fixture(scope="module")
def counted() -> dict[str, Series]:
    """Every kernel's instructions at its four sizes, in one pinned child."""
    if ARCH not in INSTRUCTIONS:
        pytest.skip(f"no kernels for {ARCH}")
    eng = Engine(screen("known-ins", counters={"INS": "instructions"}))
    missing = eng.missing()
    assert not missing, missing
    with KernelChild() as child:
        return {k: eng.series(child, k, list(SIZES[k])) for k in KERNELS}


@pytest.mark.parametrize("kernel", KERNELS)
def test_instructions_slope_is_known_count(
    counted: dict[str, Series], kernel: str, report: Callable[[str], None]
) -> None:
    """Slope exactly the table's count (guest) or within 0.5% (real PMU)."""
    s = counted[kernel]
    f = fit(s.sizes, [float(c) for c in s.counts[:, 0]])
    want = INSTRUCTIONS[ARCH][kernel]
    report(
        f"known-answer {kernel:<12} instructions/iteration predicted={want} "
        f"slope={float(f.slope)} intercept={float(f.intercept)} r2={f.r2}"
    )
    if IN_GUEST:
        assert f.slope == Fraction(want), s.describe()
    else:
        assert abs(float(f.slope) / want - 1) <= 0.005, s.describe()
