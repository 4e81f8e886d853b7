"""The vendors' top-down trees: nodes, thresholds and what each node means.

Data, and the one comparison its thresholds and ties use. A tree is a vendor's level-1 and
level-2 top-down metrics (perf's ``tools/perf/pmu-events/arch`` tables, MetricGroup
``TopdownL1``/``TopdownL2`` on Intel, ``PipelineL1``/``PipelineL2`` on AMD Zen 4/5,
``TopdownL1`` on Arm Neoverse and AmpereOne, ``TopDownL1`` on HiSilicon hip08), each node
keyed by a short label path (``BE``, ``BE/Mem``) that the bottleneck column prints and the
screens' ``bottleneck(...)`` expressions name (tiptop/screens/bottleneck.py, docs/screens.md
"Bottleneck").

*Thresholds.* A node is over its threshold when any of its :attr:`Node.threshold` terms
holds, a term being "each named node's share is above its bound" (fractions of slots).
For the Intel trees they are perf's ``MetricThreshold`` of the tma_* metrics, the same in
every Intel big-core table of kernel 6.12 (e.g. ``tma_memory_bound > 0.2 &
tma_backend_bound > 0.2``) and, in the ``atom`` tree, the E-core-only tables' own bounds,
checked against tests/data/oracle/kernel-6.12.json by tests/unit/test_bottleneck.py.
The AMD and Arm tables of 6.12 (Neoverse, AmpereOne, hip08) carry no ``MetricThreshold``:
their nodes take the bound of the Intel node they correspond to (the same split of the same
slots, Yasin, ISPASS 2014), named in :attr:`Node.like`, and the test checks that mapping
against the Intel tables too;
AMD's SMT contention has no Intel peer and takes the back-end bound (20%). A heuristic:
AMD's bad speculation leaves out the recovery bubbles that Intel's counts, so the borrowed
15% under-flags it. toplev's sibling rule (stop at level 1 when the top two level-2
children are within 0.05) is not followed (docs/screens.md "Bottleneck").

*Critical path* (toplev's reading, pmu-tools ``toplev.py``): from the root, at each level the
child over its threshold with the largest share; ties go to the earlier node in
:attr:`Tree.nodes` (front end, bad speculation, back end, retiring, then SMT, as toplev lists
level 1).

*Exact bounds.* Shares are ratios of counts computed in floating point, and two spellings of
one ratio round apart (``100 * BE / TOT / 100`` is 0.20000000000000004 where ``BE / TOT`` is
0.2): a share within :data:`TOLERANCE` of a bound is read as equal to it, so not over it
(perf's thresholds are strict: ``tma_backend_bound > 0.2``), and two shares within it of each
other are a tie (:func:`exceeds`, used for both by tiptop/screens/bottleneck.py).

*Meaning and advice.* One line each, from Yasin (ISPASS 2014, sections III-IV), Intel's
"Top-down Microarchitecture Analysis Method" (Intel 64 and IA-32 Architectures Optimization
Reference Manual, appendix B.1), AMD's "Software Optimization Guide for the AMD Zen4
Microarchitecture" (pipeline utilization) and Arm's "Arm Neoverse V1 Core: Performance
Analysis Methodology" (topdown level 1), and the seed paper on memory-boundedness (Molka et
al., ICPE 2017: stall cycles on outstanding loads track memory-bound time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tiptop.readonly import readonly

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["ADVICE", "TOLERANCE", "TREES", "Node", "Tree", "exceeds"]

#: One threshold term: ``((label, bound), ...)``, all must hold; bounds are fractions.
Term = tuple[tuple[str, float], ...]

#: How far apart two shares (fractions of slots) must be to differ: a billionth of the
#: slots, far above a float's rounding of a ratio (about 1e-16) and far below what a count
#: can move (one slot in a second of a 4-wide 4 GHz core is 6e-11 of them, and no
#: threshold or tie turns on so little).
TOLERANCE = 1e-9


def exceeds(share: ArrayLike, than: ArrayLike) -> NDArray[np.bool_]:
    """``share > than`` by more than :data:`TOLERANCE`, elementwise (a NaN exceeds nothing):
    a share at a bound, up to rounding, is not over it, and shares equal up to rounding are
    a tie."""
    return np.asarray(share) > np.asarray(than) + TOLERANCE


@readonly
class Node:
    """One top-down node: its label path, the vendor metric it is, its threshold."""

    label: str
    metric: str
    #: Over threshold when any term holds (see the module doc).
    threshold: tuple[Term, ...]
    #: The Intel tma_* metric whose threshold this node borrows (AMD, Arm); None on Intel.
    like: str | None = None

    @property
    def parent(self) -> str | None:
        """The parent's label (``BE`` for ``BE/Mem``), None at level 1."""
        head, sep, _ = self.label.rpartition("/")
        return head if sep else None

    @property
    def level(self) -> int:
        """1 for a level-1 node, 2 below it."""
        return self.label.count("/") + 1

    @property
    def bound(self) -> float:
        """The node's own bound in its first term (its share must exceed it), for display."""
        return dict(self.threshold[0]).get(self.label, 0.0)


@readonly
class Tree:
    """A vendor's tree: its nodes in toplev's order, level 1 first."""

    name: str
    desc: str
    nodes: tuple[Node, ...]

    def node(self, label: str) -> Node:
        """The node of ``label``; KeyError when the tree has none."""
        for n in self.nodes:
            if n.label == label:
                return n
        raise KeyError(label)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every node's label, in tree order."""
        return tuple(n.label for n in self.nodes)


def _t(*terms: Term) -> tuple[Term, ...]:
    return terms


def _own(label: str, bound: float, parent_bound: float | None = None) -> tuple[Term, ...]:
    """``label > bound`` (and its parent over ``parent_bound``): perf's usual form."""
    head = label.rpartition("/")[0]
    term: Term = ((label, bound),)
    if parent_bound is not None:
        term += ((head, parent_bound),)
    return (term,)


#: Intel's bounds of the tma_* metrics (perf's MetricThreshold), by label.
_TMA = {
    "FE": ("tma_frontend_bound", _own("FE", 0.15)),
    "BAD": ("tma_bad_speculation", _own("BAD", 0.15)),
    "BE": ("tma_backend_bound", _own("BE", 0.2)),
    "RET": ("tma_retiring", _t((("RET", 0.7),), (("RET/Heavy", 0.1),))),
    "FE/Lat": ("tma_fetch_latency", _own("FE/Lat", 0.1, 0.15)),
    "FE/BW": ("tma_fetch_bandwidth", _own("FE/BW", 0.2)),
    "BAD/Misp": ("tma_branch_mispredicts", _own("BAD/Misp", 0.1, 0.15)),
    "BAD/Clear": ("tma_machine_clears", _own("BAD/Clear", 0.1, 0.15)),
    "BE/Mem": ("tma_memory_bound", _own("BE/Mem", 0.2, 0.2)),
    "BE/Core": ("tma_core_bound", _own("BE/Core", 0.1, 0.2)),
    "RET/Light": ("tma_light_operations", _own("RET/Light", 0.6)),
    "RET/Heavy": ("tma_heavy_operations", _own("RET/Heavy", 0.1)),
}

_TMA_TREE = Tree(
    "tma",
    "Intel top-down (TMA) levels 1-2, thresholds of perf's tma_* metrics",
    tuple(Node(label, metric, thr) for label, (metric, thr) in _TMA.items()),
)


def _borrowed(names: dict[str, str], renames: dict[str, str] | None = None) -> tuple[Node, ...]:
    """Nodes named ``names[label]`` whose thresholds are the Intel node's of the same label
    (``renames``: this tree's label -> the Intel label it corresponds to)."""
    renames = renames or {}
    out = []
    for label, metric in names.items():
        peer = renames.get(label, label)
        if peer == "SMT":  # no Intel peer: the back-end bound (see the module doc)
            out.append(Node(label, metric, _own("SMT", 0.2), like=None))
            continue
        intel_metric, thr = _TMA[peer]
        thr = tuple(tuple((_relabel(lab, renames), b) for lab, b in term) for term in thr)
        out.append(Node(label, metric, thr, like=intel_metric))
    return tuple(out)


def _relabel(intel_label: str, renames: dict[str, str]) -> str:
    back = {v: k for k, v in renames.items()}
    return back.get(intel_label, intel_label)


_ZEN_RENAMES = {
    "BAD/Rsync": "BAD/Clear",
    "BE/CPU": "BE/Core",
    "RET/Fast": "RET/Light",
    "RET/Ucode": "RET/Heavy",
}


def _zen(n: int, by: str) -> Tree:
    """AMD Zen ``n``'s PipelineL1/L2 (Zen 5's level-2 names carry ``_by``/``_from``)."""
    fr = "_from" if by else ""
    names = {
        "FE": "frontend_bound",
        "BAD": "bad_speculation",
        "BE": "backend_bound",
        "RET": "retiring",
        "SMT": "smt_contention",
        "FE/Lat": f"frontend_bound{by}_latency",
        "FE/BW": f"frontend_bound{by}_bandwidth",
        "BAD/Misp": f"bad_speculation{fr}_mispredicts",
        "BAD/Rsync": f"bad_speculation{fr}_pipeline_restarts",
        "BE/Mem": f"backend_bound{by}_memory",
        "BE/CPU": f"backend_bound{by}_cpu",
        "RET/Fast": f"retiring{fr}_fastpath",
        "RET/Ucode": f"retiring{fr}_microcode",
    }
    return Tree(
        f"zen{n}",
        f"AMD Zen {n} pipeline utilization levels 1-2 (amdzen{n}/pipeline.json), Intel's bounds",
        _borrowed(names, _ZEN_RENAMES),
    )


_NEOVERSE = Tree(
    "neoverse",
    "Arm Neoverse top-down level 1 (neoverse-*/metrics.json), Intel's bounds",
    _borrowed(
        {
            "FE": "frontend_bound",
            "BAD": "bad_speculation",
            "BE": "backend_bound",
            "RET": "retiring",
        }
    ),
)

#: AmpereOne and AmpereOneX: level 1 of ampere/ampereone*/metrics.json (its own names for
#: retiring and bad speculation), Intel's bounds as on the Neoverse cores.
_AMPERE = Tree(
    "ampere",
    "AmpereOne/AmpereOneX top-down level 1 (ampere/ampereone*/metrics.json), Intel's bounds",
    _borrowed(
        {
            "FE": "frontend_bound",
            "BAD": "slots_lost_misspeculation_fraction",
            "BE": "backend_bound",
            "RET": "retired_fraction",
        }
    ),
)

#: HiSilicon hip08 (Kunpeng 920): level 1 of hisilicon/hip08/metrics.json (TopDownL1).
_HIP08 = Tree(
    "hip08",
    "HiSilicon hip08 top-down level 1 (hisilicon/hip08/metrics.json), Intel's bounds",
    _borrowed(
        {
            "FE": "frontend_bound",
            "BAD": "bad_speculation",
            "BE": "backend_bound",
            "RET": "retiring",
        }
    ),
)

#: Intel's E-core-only parts (Sierra Forest, Grand Ridge, Alder Lake-N): level 1 of their
#: tma_* metrics, whose MetricThreshold differs from the big cores' (sierraforest/,
#: grandridge/, alderlaken/ tma_*: front end > 0.2, back end > 0.1, retiring > 0.75 alone).
_ATOM = Tree(
    "atom",
    "Intel E-core top-down level 1 (sierraforest, grandridge, alderlaken tma_*), perf's bounds",
    (
        Node("FE", "tma_frontend_bound", _own("FE", 0.2)),
        Node("BAD", "tma_bad_speculation", _own("BAD", 0.15)),
        Node("BE", "tma_backend_bound", _own("BE", 0.1)),
        Node("RET", "tma_retiring", _own("RET", 0.75)),
    ),
)

#: Every tree, by the name a ``bottleneck(...)`` expression gives.
TREES: dict[str, Tree] = {
    t.name: t for t in (_TMA_TREE, _ATOM, _zen(4, ""), _zen(5, "_by"), _NEOVERSE, _AMPERE, _HIP08)
}


#: Per last label part: what the node means, and what usually helps (module doc sources).
ADVICE: dict[str, tuple[str, str]] = {
    "FE": (
        "the front end delivered too few ops: instruction fetch or decode",
        "shrink the hot code footprint (PGO/LTO, hot/cold splitting), huge pages for code",
    ),
    "BAD": (
        "slots spent on ops that never retired: mispredicted paths, pipeline clears",
        "make hot branches predictable or branch-free (cmov, sorting data, lookup tables)",
    ),
    "BE": (
        "ops waited in the back end: for data from memory or for execution units",
        "see its level 2: memory (working set, access pattern) or core (dependency chains)",
    ),
    "RET": (
        "slots retiring useful ops: the pipeline is busy doing work",
        "do less work: better algorithms, vectorise (SIMD), avoid redundant computation",
    ),
    "SMT": (
        "slots given to the sibling hardware thread of the same core",
        "pin busy threads to separate cores, or disable SMT for this workload",
    ),
    "Lat": (
        "fetch latency: i-cache or iTLB misses, branch resteers",
        "smaller hot code, fewer indirect calls, huge pages for text, PGO code layout",
    ),
    "BW": (
        "fetch or decode bandwidth: ops came, but too few per cycle",
        "fewer long or complex instructions in hot loops; loop alignment; op-cache-friendly loops",
    ),
    "Misp": (
        "branch mispredictions: work thrown away after a wrong guess",
        "unpredictable branches: branch-free code, sort or partition data, profile-guided layout",
    ),
    "Clear": (
        "machine clears: pipeline flushes (memory ordering, self-modifying code, FP assists)",
        "avoid false sharing and 4K aliasing, denormals (FTZ/DAZ), code written at run time",
    ),
    "Rsync": (
        "pipeline restarts (resyncs): flushes other than branch mispredictions",
        "avoid false sharing and memory-ordering conflicts, self-modifying code",
    ),
    "Mem": (
        "stalled on loads and stores: cache and DRAM misses (Molka et al., ICPE 2017)",
        "smaller working set, sequential access or blocking, prefetch; NUMA-local memory",
    ),
    "Core": (
        "stalled on the core: dependency chains, divider or port pressure",
        "break dependency chains (more accumulators), avoid divides, spread work over ports",
    ),
    "CPU": (
        "stalled on the core: dependency chains, divider or port pressure",
        "break dependency chains (more accumulators), avoid divides, spread work over ports",
    ),
    "Light": (
        "retiring simple ops: the pipeline works at full width",
        "vectorise (SIMD) and do less work; the code already runs efficiently",
    ),
    "Fast": (
        "retiring fast-path ops: the pipeline works at full width",
        "vectorise (SIMD) and do less work; the code already runs efficiently",
    ),
    "Heavy": (
        "retiring heavy ops: multi-op instructions or microcode sequences",
        "avoid microcoded instructions (string ops, gathers, some divides) in hot loops",
    ),
    "Ucode": (
        "retiring microcode ops: microcoded instructions",
        "avoid microcoded instructions (string ops, gathers, some divides) in hot loops",
    ),
}
