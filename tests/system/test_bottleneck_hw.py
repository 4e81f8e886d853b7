"""The bottleneck column on real counts (docs/screens.md "Bottleneck"): the self-test
kernels, run pinned and counted through the engine's plan of the host's screen
(tests/support/known_answer.py), get the bottleneck they are built for: the division chain
is back-end (core) bound, the 16 MiB pointer chase memory bound (back end on a level-1
screen), the random branch bad speculation, the add loop retiring or core bound.
``topdown2`` is used where it has a bottleneck column, else ``topdown``. Each slope per
iteration is the counter's delta, so a run's fixed cost is left out. Without a hardware
PMU, or where the CPU's screens have no bottleneck column, each test skips saying why."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.known_answer import Engine, core_cpu, host_screen
from tests.system.known_runs import pinned_child
from tests.system.test_known_answer import _counted, _need_events, _need_pmu
from tiptop.cells import STATUS_DTYPE, VALUED
from tiptop.screens.bottleneck import is_path, parse_path
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.model import ScreenSpec
from tiptop.screens.variables import RowFacts
from tiptop.selftest.checks import SIZES

#: Kernel -> (screen, the nodes its path may end at; on a level-1 screen their parents).
BUILT_FOR = {
    "divide": ("topdown2", ("BE", "BE/Core", "BE/CPU")),
    "mispredict": ("topdown2", ("BAD", "BAD/Misp")),
    "add": ("topdown2", ("RET", "RET/Light", "RET/Fast", "BE", "BE/Core", "BE/CPU")),
    "chase_large": ("topdown2", ("BE/Mem",)),
}


def bottleneck(screen: ScreenSpec, slopes: dict[str, float]) -> str | None:
    """The screen's bottleneck cell on per-iteration slopes: its label, ``-``, or None when
    a count is missing."""
    aliases = list(slopes)
    d = np.array([[slopes[a] for a in aliases]])
    ok = np.zeros(d.shape, STATUS_DTYPE)
    z = np.zeros(1)
    facts = RowFacts(np.full(1, 100.0), z, z, z, 1.0, ok[0, :1], ok[0, :1])
    cells = Evaluator(screen, aliases).evaluate(facts, CounterCells(d, ok, d, ok, np.ones(d.shape)))
    j = next(i for i, c in enumerate(screen.columns) if is_path(c.expr))
    if cells.status[0, j] not in VALUED:
        return None
    idx = int(cells.node[0, j])
    return parse_path(screen.columns[j].expr).labels[idx] if idx >= 0 else "-"


@pytest.mark.hwpmu
@pytest.mark.parametrize("kernel", sorted(BUILT_FOR))
def test_kernels_get_the_bottleneck_they_are_built_for(kernel: str) -> None:
    _need_pmu()
    name, accepted = BUILT_FOR[kernel]
    spec = host_screen(name) if _has_tree(name) else host_screen("topdown")
    if not any(is_path(c.expr) for c in spec.columns):
        pytest.skip(f"the {spec.name} screen this CPU gets ({spec.desc}) has no bottleneck column")
    levels = {
        lab.count("/") + 1
        for lab, _ in parse_path(next(c.expr for c in spec.columns if is_path(c.expr))).columns
    }
    if max(levels) == 1:  # a level-1 screen: only the level-1 node can be asked for
        accepted = tuple({a.split("/")[0] for a in accepted})
    eng = Engine(spec)
    _need_events(eng)
    with pinned_child(core_cpu()) as child:
        s = eng.series(child, kernel, list(SIZES[kernel]))
    _counted(s)
    got = bottleneck(spec, s.slopes())
    why = f"{spec.desc}: {kernel} -> {got}\n{s.describe()}"
    assert got is not None and got != "-", why
    assert got in accepted, why


def _has_tree(name: str) -> bool:
    try:
        return any(is_path(c.expr) for c in host_screen(name).columns)
    except StopIteration:  # no such screen for this CPU
        return False
