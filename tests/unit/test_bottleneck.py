"""The bottleneck column (tiptop/screens/bottleneck.py, topdown.py) against the vendors'
tables (tests/data/oracle/kernel-6.12.json): the vendored thresholds are perf's
``MetricThreshold`` (Intel) or the Intel peer's (AMD, Arm, whose tables have none), and on
synthetic counts the column names the critical path that the tables give, computed here
independently: each node's value from its ``MetricExpr`` (tests/support/perfexpr.py), its
threshold from the tables, and at each level the child over its threshold with the largest
share, ties to the earlier in toplev's order. No PMU needed."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import random
from collections.abc import Callable

import numpy as np
import pytest

from tests.support import builders, oracle
from tests.support.perf_metric_eval import PerfPyExpr, parse_with_metric_py
from tests.support.perfexpr import Expr, canonical, parse
from tests.unit.test_oracle_screens import ARM_SLOTS, LITERALS, VARIANTS, gate_models
from tiptop.cells import STATUS_DTYPE, Status
from tiptop.choices import Format
from tiptop.options import Options
from tiptop.outputs.batch import TextWriter
from tiptop.outputs.records import RecordWriter
from tiptop.screens import ScreenSpec, Target, builtin_screens
from tiptop.screens.bottleneck import BoundPath, parse_path
from tiptop.screens.deviations import for_variant
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.printf import row_format
from tiptop.screens.topdown import TOLERANCE, TREES, exceeds
from tiptop.screens.variables import RowFacts

TABLES = oracle.data()["tables"]


def _tables_of(tree: str) -> list[str]:
    """The tables the screens with a ``bottleneck(tree: ...)`` column lead to."""
    return sorted(
        {
            t
            for _vid, raw in VARIANTS
            if any(f"bottleneck({tree}:" in (i.attrs.get("expr") or "") for i in raw.items)
            for t in oracle.tables(raw, gate_models(raw))
        }
    )


#: The Intel big-core tables (``tma`` tree) and the E-core-only ones (``atom`` tree: their
#: tma_* thresholds differ), each as the screens that name the tree lead to them.
INTEL = _tables_of("tma")
ATOM = _tables_of("atom")
#: The Intel peer of each AMD and Arm metric: the same split of the same slots (the test's
#: own reading of the tables' descriptions; the product's is topdown.py's ``like``).
PEER = {
    "frontend_bound": "tma_frontend_bound",
    "bad_speculation": "tma_bad_speculation",
    "backend_bound": "tma_backend_bound",
    "retiring": "tma_retiring",
    "latency": "tma_fetch_latency",
    "bandwidth": "tma_fetch_bandwidth",
    "mispredicts": "tma_branch_mispredicts",
    "restarts": "tma_machine_clears",
    "memory": "tma_memory_bound",
    "cpu": "tma_core_bound",
    "fastpath": "tma_light_operations",
    "microcode": "tma_heavy_operations",
    "retired_fraction": "tma_retiring",  # AmpereOne's names
    "misspeculation_fraction": "tma_bad_speculation",
}
#: Shares drawn around the tables' bounds.
BOUNDS = [0.05, 0.1, 0.15, 0.2, 0.6, 0.7, 0.8]
LEVEL1, LEVEL2 = {"TopdownL1", "PipelineL1", "TopDownL1"}, {"TopdownL2", "PipelineL2"}
#: toplev's order, for ties: level 1, then each parent's children.
ORDER = (
    "frontend",
    "bad_spec",
    "misspeculation",
    "backend",
    "retiring",
    "retired",
    "smt",
    "latency",
    "bandwidth",
    "mispredicts",
    "clears",
    "restarts",
    "memory",
    "core",
    "cpu",
    "resource",
    "light",
    "fastpath",
    "heavy",
    "microcode",
)


def _peer(metric: str) -> str:
    for key, intel in PEER.items():
        if metric == key or metric.endswith("_" + key):
            return intel
    raise KeyError(metric)


def _rank(metric: str) -> int:
    return next(i for i, k in enumerate(ORDER) if k in metric.removeprefix("tma_"))


def _truth(node_thr: tuple, shares: dict[str, float]) -> bool:
    return any(all(shares.get(lab, math.nan) > b for lab, b in t) for t in node_thr)


# ----------------------------------------------------------------- vendored thresholds


@pytest.mark.parametrize(
    ("name", "table"), [("tma", t) for t in INTEL] + [("atom", t) for t in ATOM]
)
def test_intel_thresholds_are_perfs(name: str, table: str) -> None:
    """Each tma node's threshold holds exactly where perf's MetricThreshold does, on random
    shares around the bounds, in every Intel table (the E-core-only ones: the atom tree,
    which is their whole level 1)."""
    tree = TREES[name]
    if name == "atom":
        assert sorted(ATOM) == ["alderlaken", "grandridge", "sierraforest"]
        level1 = {
            n
            for n, m in TABLES[table]["metrics"].items()
            if "TopdownL1" in m.get("MetricGroup", "").split(";")
        }
        assert level1 == {n.metric for n in tree.nodes}
    metrics = TABLES[table]["metrics"]
    label_of = {n.metric: n.label for n in tree.nodes}
    rng = random.Random(table)
    for node in tree.nodes:
        if node.metric not in metrics:
            continue
        thr = parse(metrics[node.metric]["MetricThreshold"])
        assert thr.names <= set(label_of), (table, node.metric, thr.names)
        for _ in range(300):
            shares = {m: rng.choice(BOUNDS) + rng.uniform(-0.01, 0.01) for m in label_of}
            perf = bool(thr.value(shares.__getitem__, {}))
            ours = _truth(node.threshold, {label_of[m]: v for m, v in shares.items()})
            assert ours == perf, (table, node.label, shares)


BORROWING = [
    ("zen4", "amdzen4"),
    ("zen5", "amdzen5"),
    ("neoverse", "arm/neoverse-v1"),
    ("neoverse", "arm/neoverse-n2-v2"),
    ("ampere", "ampere/ampereone"),
    ("ampere", "ampere/ampereonex"),
    ("hip08", "hisilicon/hip08"),
]


@pytest.mark.parametrize(("tree", "table"), BORROWING)
def test_amd_and_arm_borrow_their_intel_peers_threshold(tree: str, table: str) -> None:
    """The AMD and Arm tables give no threshold; each node's is its Intel peer's
    (sapphirerapids' MetricThreshold, names mapped), SMT contention the back end's 20%; and
    the nodes are the tables' level-1/2 top-down metrics, each under its group's parent."""
    t = TREES[tree]
    metrics = TABLES[table]["metrics"]
    intel = TABLES["sapphirerapids"]["metrics"]
    label_of = {n.metric: n.label for n in t.nodes}
    for node in t.nodes:
        m = metrics[node.metric]
        assert "MetricThreshold" not in m, f"{table} has a threshold for {node.metric} now"
        groups = m["MetricGroup"].split(";")
        levels = {f"topdownl{node.level}", f"pipelinel{node.level}"}  # hip08: TopDownL1
        assert levels & {g.lower() for g in groups}, node
        if node.parent:
            assert f"{t.node(node.parent).metric}_group" in groups, node
        if node.label == "SMT":
            assert node.threshold == ((("SMT", 0.2),),)
            continue
        assert node.like == _peer(node.metric)
        peer_of = {_peer(x): x for x in label_of if x != "smt_contention"}
        thr = parse(intel[node.like]["MetricThreshold"])
        rng = random.Random(node.metric)
        for _ in range(300):
            shares = {x: rng.choice(BOUNDS) for x in label_of}
            perf = bool(thr.value(functools.partial(_peer_share, shares, peer_of), {}))
            assert _truth(node.threshold, {label_of[x]: v for x, v in shares.items()}) == perf
    level1 = {n for n, v in metrics.items() if LEVEL1 & set(v.get("MetricGroup", "").split(";"))}
    assert level1 == {n.metric for n in t.nodes if n.level == 1}


# ----------------------------------------------------------------- the critical path

#: Per case: target, table, the count generator (alias -> count) on one random draw.
Gen = Callable[[random.Random], dict[str, float]]


#: Decimal places the oracle compares shares at: float noise (1e-16) gone, any real
#: difference of counts (1e-10 of the slots and more here) kept.
EXACT_DIGITS = 12
#: Shares a draw may put a node at exactly (the tables' bounds), where float rounding
#: alone would decide a strict ``>`` (tiptop/screens/topdown.py "Exact bounds").
EXACT = (0.1, 0.15, 0.2, 0.6, 0.7, 0.75)


def _parts(rng: random.Random, k: int, total: float) -> list[float]:
    """``k`` whole counts summing to ``total``; in about a fifth of the draws two are equal
    (a tie), in about a third of the others one is at an exact bound's share of ``total``,
    the rest scaled to fill it, rounding put where nothing is pinned."""
    w = [rng.expovariate(1.0) for _ in range(k)]
    f = [x / sum(w) for x in w]
    pinned: list[int] = []
    if rng.random() < 0.2:  # a tie: the second of two takes the first's share
        pinned = sorted(rng.sample(range(k), 2))
        f[pinned[0]] = f[pinned[1]] = min(f[pinned[0]], 0.45)
    elif rng.random() < 0.4:
        pinned = [rng.randrange(k)]
        f[pinned[0]] = rng.choice(EXACT)
    free = [n for n in range(k) if n not in pinned]
    left = 1.0 - sum(f[n] for n in pinned)
    scale = left / sum(f[n] for n in free)
    counts = [float(round((f[n] if n in pinned else f[n] * scale) * total)) for n in range(k)]
    counts[free[-1]] += total - sum(counts)
    return counts


def _split(rng: random.Random, whole: float, total: float) -> float:
    """A part of ``whole`` (counts): at random, or at a bound's share of ``total`` where
    that fits (a level-2 node at an exact bound), as a whole count."""
    exact = [round(b * total) for b in EXACT if b * total <= whole]
    if exact and rng.random() < 0.3:
        return float(rng.choice(exact))
    return float(round(whole * rng.random()))


def _zen(width: int) -> Gen:
    def gen(rng: random.Random) -> dict[str, float]:
        cyc = 1e9
        slots = width * cyc
        ret, bad, fe, be, smt = _parts(rng, 5, slots)
        nc = float(rng.randint(10**6, 10**8))
        return {
            "CYC": cyc,
            "CYC2": cyc,
            "RET": ret,
            "DISP": ret + bad,
            "FE": fe,
            "BE": be,
            "SMT": smt,
            "UC": float(round(ret * rng.random() ** 2)),
            "MISP": float(rng.randint(1, 10**6)),
            "RSY": float(rng.randint(1, 10**6)),
            "FEL": float(round(rng.random() * fe / width)),
            "LNC": float(round(nc * rng.random())),
            "NC": nc,
        }

    return gen


def _intel(rng: random.Random) -> dict[str, float]:
    s = 1e10
    ret, bad, fe, be = _parts(rng, 4, s)
    tot = s
    ud = float(round(rng.random() * 0.02 * fe)) if rng.random() < 0.7 else 0.0
    return {
        "S": s,
        "RET": ret,
        "BAD": bad,
        "FE": fe,
        "BE": be,
        "UD": ud,
        "CC": float(round(rng.random() * 0.01 * bad / 5)) if ud else 0.0,
        "HVY": _split(rng, ret, tot),
        "BRM": _split(rng, bad, tot),
        "FL": ud + _split(rng, fe - ud, tot),
        "MB": _split(rng, be, tot),
    }


def _skylake(rng: random.Random) -> dict[str, float]:
    """Sandy Bridge..Cascade Lake raw counts: 4 slots per cycle; bad speculation is
    issued - retired slots + 4 recovery cycles (tma_bad_speculation, #SMT_on 0)."""
    clk = 1e9
    ret, bad, fe, _be = _parts(rng, 4, 4 * clk)
    rec = float(round(rng.random() * bad / 8))
    return {"CLK": clk, "RETS": ret, "ISS": ret + bad - 4 * rec, "FB": fe, "REC": rec}


def _neoverse(rng: random.Random) -> dict[str, float]:
    cyc = 1e9
    ss = 8 * cyc * rng.random()
    ssf = ss * rng.random()
    ops = rng.uniform(1e9, 6e9)
    return {
        "CYC": cyc,
        "SS": ss,
        "SSF": ssf,
        "SSB": ss - ssf,
        "OPS": ops,
        "OPR": ops * rng.uniform(0.5, 1.0),
        "BMP": rng.random() * ssf / 32,
    }


def _ampere(rng: random.Random) -> dict[str, float]:
    """AmpereOne counts: 4 slots per cycle, retired and speculated ops, back-end stalled
    slots; the front end is the rest."""
    cyc = 1e9
    ret, bad, _fe, be = _parts(rng, 4, 4 * cyc)
    return {"CYC": cyc, "OPR": ret, "OPS": ret + bad, "SSB": be}


def _hip08(rng: random.Random) -> dict[str, float]:
    """hip08 counts: 4 slots per cycle, retired and speculated instructions, fetch bubbles;
    the back end is the rest."""
    cyc = 1e9
    ret, bad, fe, _be = _parts(rng, 4, 4 * cyc)
    return {"CYC": cyc, "INS": ret, "SPEC": ret + bad, "FB": fe}


def _atom(width: int) -> Gen:
    """Intel E-core counts: four TOPDOWN_* totals of ``width`` slots per cycle (Crestmont's
    need not add up: in half the draws the rest or a little over; Alder Lake-N reads no
    BAD)."""

    def gen(rng: random.Random) -> dict[str, float]:
        clk = 1e9
        off = rng.random() < 0.5  # the four totals apart from the slots, or exactly them
        parts = _parts(rng, 4, width * clk)
        ret, bad, fe, be = (round(c * rng.uniform(0.95, 1.02)) if off else c for c in parts)
        return {"CLK": clk, "RET": ret, "BAD": bad, "FE": fe, "BE": be}

    return gen


CASES = {
    "zen4-l1": (Target("x86", "19_11"), "topdown", "amdzen4", _zen(6)),
    "zen4-l2": (Target("x86", "19_11"), "topdown2", "amdzen4", _zen(6)),
    "zen5-l1": (Target("x86", "1A_02"), "topdown", "amdzen5", _zen(8)),
    "zen5-l2": (Target("x86", "1A_02"), "topdown2", "amdzen5", _zen(8)),
    "spr-l1": (Target("x86", "06_8F"), "topdown", "sapphirerapids", _intel),
    "spr-l2": (Target("x86", "06_8F"), "topdown2", "sapphirerapids", _intel),
    "icl-l1": (Target("x86", "06_7E"), "topdown", "icelake", _intel),
    "skl-l1": (Target("x86", "06_5E"), "topdown", "skylake", _skylake),
    "adl-l1": (Target("x86", "06_97"), "topdown", "alderlake", _intel),
    "adl-l2": (Target("x86", "06_97"), "topdown2", "alderlake", _intel),
    "v1-l1": (Target("arm64", "41_D40"), "topdown", "arm/neoverse-v1", _neoverse),
    "a1-l1": (Target("arm64", "C0_AC3"), "topdown", "ampere/ampereone", _ampere),
    "a1x-l1": (Target("arm64", "C0_AC4"), "topdown", "ampere/ampereonex", _ampere),
    "hip08-l1": (Target("arm64", "48_D01"), "topdown", "hisilicon/hip08", _hip08),
    "srf-l1": (Target("x86", "06_AF"), "topdown", "sierraforest", _atom(6)),
    "grr-l1": (Target("x86", "06_B6"), "topdown", "grandridge", _atom(6)),
    "adln-l1": (Target("x86", "06_BE"), "topdown", "alderlaken", _atom(5)),
}


def _screen(target: Target, name: str) -> ScreenSpec:
    return next(s for s in builtin_screens(target) if s.name == name)


def _facts(n: int) -> RowFacts:
    z = np.zeros(n)
    ok = np.zeros(n, STATUS_DTYPE)
    return RowFacts(np.full(n, 100.0), z, z, z, 1.0, ok, ok)


def evaluate(
    screen: ScreenSpec, deltas: dict[str, float], running: float = 1.0, missing: str | None = None
) -> tuple[float, int, float, int]:
    """The bottleneck cell's ``(value, status, running, node)`` on one row of ``deltas``,
    through the one evaluator; ``missing``: that counter unreadable."""
    aliases = [c.alias for c in screen.counters]
    d = np.array([[deltas[a] for a in aliases]])
    st = np.zeros(d.shape, STATUS_DTYPE)
    if missing:
        st[0, aliases.index(missing)] = Status.UNREADABLE
        d[0, aliases.index(missing)] = np.nan
    cells = CounterCells(d, st, d, st, np.full(d.shape, running))
    out = Evaluator(screen, aliases).evaluate(_facts(1), cells)
    cell = (float(out.values[0, -1]), int(out.status[0, -1]), float(out.running[0, -1]))
    return (*cell, int(out.node[0, -1]))


@functools.cache
def _parsed(parser: Callable[[str], Expr | PerfPyExpr], text: str) -> Expr | PerfPyExpr:
    """``parser(text)``, once per text (the draws evaluate the same formulas)."""
    return parser(text)


def _peer_share(shares: dict[str, float], peer_of: dict[str, str], name: str) -> float:
    """The share of ``name``'s peer node (nan for a name with none)."""
    return shares.get(peer_of.get(name, ""), math.nan)


def vendor_path(
    table: str,
    screen: ScreenSpec,
    deltas: dict[str, float],
    unseen: random.Random | None = None,
    silenced: frozenset[str] = frozenset(),
    parser: Callable[[str], Expr | PerfPyExpr] = parse,
) -> tuple[str | None, float]:
    """The deepest node on the critical path by the tables alone, and its share in %.

    By default the nodes the screen does not show are left out, and an event it does not
    count reads NaN. With ``unseen``, such an event gets a random count instead and the
    walk stops at level 1: perf's own level-1 path, every threshold term live. The
    metrics in ``silenced`` read 0 in thresholds (a term the screen cannot count).
    ``parser`` reads each ``MetricExpr`` (ours, or perf's metric.py); thresholds are
    always ours (perf's build does not read them with metric.py). Thresholds and ties
    compare the values as exact numbers would: rounded to :data:`EXACT_DIGITS` places, so
    that 0.2 computed as 0.20000000000000004 is at its bound (the product's tolerance,
    tiptop/screens/topdown.py ``exceeds``, is not used here)."""
    t = TABLES[table]
    counts = {
        canonical(c.table_event).lower(): deltas[c.alias]
        for c in screen.counters
        if c.table_event is not None
    }
    picked = screen.variant.picked if screen.variant is not None else None
    model = screen.variant.variants[picked][2] if screen.variant and picked is not None else None
    lits = {**LITERALS, "#slots": ARM_SLOTS.get((model or "").split(";")[0], math.nan)}
    top = max(counts.values())

    def raw(name: str) -> float:  # as a formula reads it: a metric in its own unit
        if name in t["metrics"]:
            return _parsed(parser, t["metrics"][name]["MetricExpr"]).value(raw, lits)
        if canonical(name) in t["metrics"]:  # metric.py keeps a name's escapes
            return raw(canonical(name))
        key = canonical(name).lower()
        if key not in counts and unseen is not None:  # no screen of this case counts it
            counts[key] = top * unseen.random() ** 2
        return counts.get(key, math.nan)  # not on this screen

    def value(name: str) -> float:  # a fraction of the slots (a "1percent" metric / 100)
        scale = t["metrics"].get(name, {}).get("ScaleUnit", "")
        return raw(name) / 100.0 if scale.startswith("1percent") else raw(name)

    def judged(name: str) -> float:  # as compared: the exact value, rounding noise removed
        return 0.0 if name in silenced else round(value(name), EXACT_DIGITS)

    groups = {n: m.get("MetricGroup", "").split(";") for n, m in t["metrics"].items()}
    topdown = [n for n, g in groups.items() if (LEVEL1 | LEVEL2) & set(g)]

    def over(name: str) -> bool:
        thr = t["metrics"][name].get("MetricThreshold")
        if name == "smt_contention":  # no Intel peer: the back end's bound
            return judged(name) > 0.2
        if thr is None:  # AMD, Arm: the Intel peer's, its names mapped to this table's
            peer = parse(TABLES["sapphirerapids"]["metrics"][_peer(name)]["MetricThreshold"])
            mine = {_peer(n): n for n in topdown if n != "smt_contention" and _safe_peer(n)}
            return bool(peer.value(lambda n: judged(mine[n]) if n in mine else math.nan, lits))
        return bool(_parsed(parse, thr).value(judged, lits))

    level = [n for n, g in groups.items() if LEVEL1 & set(g)]
    shown = {c.table_metric.split("*")[-1].strip() for c in screen.columns if c.table_metric}
    on_screen = lambda n: n in shown or any(f"{n}_group" in groups[k] for k in shown)  # noqa: E731
    if unseen is not None:  # perf's level 1, whatever the screen shows
        first = set(level)
        on_screen = first.__contains__
    node, share = None, math.nan
    while level:
        cands = [n for n in sorted(level, key=_rank) if on_screen(n) and over(n)]
        if not cands:
            break
        best = max(cands, key=judged)  # the first of equal shares: sorted by toplev's order
        node, share = best, 100.0 * value(best)
        unit = t["metrics"][best].get("Unit")  # a hybrid's table: the same core's children
        kids = [
            n
            for n, g in groups.items()
            if f"{best}_group" in g and t["metrics"][n].get("Unit") == unit
        ]
        level = kids if all(map(on_screen, kids)) else []  # no step into a half-shown level
    return node, share


#: Per level-1 case: the metrics the screen cannot count that a level-1 threshold reads
#: (Intel's heavy operations, AMD's microcode: tiptop/screens/deviations.py "threshold").
UNCOUNTED = {
    "spr-l1": set(),
    "icl-l1": {"tma_heavy_operations"},
    "skl-l1": {"tma_heavy_operations"},
    "adl-l1": set(),
    "zen4-l1": {"retiring_microcode"},
    "zen5-l1": {"retiring_from_microcode"},
    "v1-l1": set(),
    "a1-l1": set(),
    "a1x-l1": set(),
    "hip08-l1": set(),
    "srf-l1": set(),
    "grr-l1": set(),
    "adln-l1": set(),
}


@pytest.mark.parametrize("case", sorted(UNCOUNTED))
def test_level1_path_is_perfs_but_for_declared_deviations(case: str) -> None:
    """On 1000 random draws, with every event perf's level-1 thresholds read (those the
    screen does not count drawn at random), the column names perf's level-1 node whenever
    the screen can count what that threshold reads; each other draw differs only by the
    threshold terms the variant declares (deviations.py ``threshold``), and such a
    declared deviation does differ on some draw."""
    target, name, table, gen = CASES[case]
    screen = _screen(target, name)
    labels = parse_path(screen.columns[-1].expr).labels
    tree = parse_path(screen.columns[-1].expr).tree
    assert tree is not None  # a top-down screen's path has its vendor's tree
    rng = random.Random(f"{case}-level1")
    assert screen.variant is not None and screen.variant.picked is not None
    _desc, arch, model = screen.variant.variants[screen.variant.picked]
    declared = [d for d in for_variant(name, arch, model) if d.kind == "threshold"]
    differ = 0
    for _ in range(1000):
        deltas = gen(rng)
        idx = evaluate(screen, deltas)[3]
        ours = None if idx < 0 else tree.node(labels[idx]).metric
        seed = rng.random()  # the same counts for the events the screen does not count
        full = vendor_path(table, screen, deltas, random.Random(seed))[0]
        silenced = frozenset(UNCOUNTED[case])
        read = vendor_path(table, screen, deltas, random.Random(seed), silenced)[0]
        by_perf_py = vendor_path(
            table, screen, deltas, random.Random(seed), silenced, parse_with_metric_py
        )[0]
        assert by_perf_py == read, (case, deltas)  # perf's own parse of the formulas
        assert ours == read, (case, deltas)
        differ += ours != full
    assert bool(declared) == bool(UNCOUNTED[case]), (case, declared)
    if declared:
        assert differ > 0, f"{case}: no draw differs: drop the threshold deviation"
    else:
        assert differ == 0, case


def _safe_peer(n: str) -> bool:
    try:
        _peer(n)
    except KeyError:
        return False
    return True


@pytest.mark.parametrize("case", sorted(CASES))
def test_critical_path_is_the_vendors(case: str) -> None:
    """On random draws of consistent counts (1000 for a level-2 screen, 150 for level 1,
    whose perf reading test_level1_path_is_perfs_but_for_declared_deviations draws 1000
    times), the column names the node (and share) that the tables' metrics and thresholds
    give, exact bounds and ties included; the draws reach several paths."""
    target, name, table, gen = CASES[case]
    screen = _screen(target, name)
    labels = parse_path(screen.columns[-1].expr).labels
    tree = parse_path(screen.columns[-1].expr).tree
    assert tree is not None  # a top-down screen's path has its vendor's tree
    rng = random.Random(case)
    seen = set()
    for _ in range(1000 if case.endswith("-l2") else 150):
        deltas = gen(rng)
        share, status, _r, idx = evaluate(screen, deltas)
        assert status in (Status.OK, Status.SUSPECT), (case, deltas)
        want, want_share = vendor_path(table, screen, deltas)
        theirs, their_share = vendor_path(table, screen, deltas, parser=parse_with_metric_py)
        assert theirs == want and their_share == pytest.approx(want_share, nan_ok=True)
        got = None if idx < 0 else tree.node(labels[idx]).metric
        assert got == want, (case, deltas, idx)
        assert share == (pytest.approx(want_share, abs=1e-6) if want else 0.0)
        seen.add(got)
    assert len(seen) >= 3, (case, seen)  # not one answer for every draw


def _tied() -> dict[str, float]:
    """Zen 4 counts with front end and back end tied at 30% of slots, both over."""
    cyc, slots = 1e9, 6e9
    return {
        "CYC": cyc,
        "CYC2": cyc,
        "RET": 0.25 * slots,
        "DISP": 0.35 * slots,
        "FE": 0.3 * slots,
        "BE": 0.3 * slots,
        "SMT": 0.05 * slots,
        "UC": 0.0,
        "MISP": 1.0,
        "RSY": 1.0,
        "FEL": 0.3 * cyc / 2,
        "LNC": 50.0,
        "NC": 100.0,
    }


def test_a_tie_goes_to_the_earlier_node_as_the_vendor_path() -> None:
    screen = _screen(Target("x86", "19_11"), "topdown")
    labels = parse_path(screen.columns[-1].expr).labels
    share, status, _, idx = evaluate(screen, _tied())
    assert status == Status.OK
    assert labels[idx] == "FE" and share == pytest.approx(30.0)  # FE before BE
    node, node_share = vendor_path("amdzen4", screen, _tied())
    assert node == "frontend_bound" and node_share == pytest.approx(30.0)
    # level 2 of the tie: front-end latency 15% (over 10%), bandwidth 15% (not over 20%)
    screen2 = _screen(Target("x86", "19_11"), "topdown2")
    labels2 = parse_path(screen2.columns[-1].expr).labels
    share, _, _, idx = evaluate(screen2, _tied())
    assert labels2[idx] == "FE/Lat" and share == pytest.approx(15.0)
    assert vendor_path("amdzen4", screen2, _tied())[0] == "frontend_bound_latency"


def _zen4_level2(bad: float, fe: float, be: float, **extra: float) -> dict[str, float]:
    """Zen 4 level-2 counts with bad speculation, front end and back end at these exact
    shares of the 6e9 slots (retiring 0.3, SMT the rest); ``extra`` sets counts."""
    cyc, slots = 1e9, 6e9
    ret = 0.3 * slots
    counts = {
        "CYC": cyc,
        "CYC2": cyc,
        "RET": ret,
        "DISP": ret + round(bad * slots),
        "FE": round(fe * slots),
        "BE": round(be * slots),
        "SMT": slots - ret - round(bad * slots) - round(fe * slots) - round(be * slots),
        "UC": 0.0,
        "MISP": 1.0,
        "RSY": 1.0,
        "FEL": 0.0,
        "LNC": 1.0,
        "NC": 2.0,
    }
    return {**counts, **extra}


def _shares(screen: ScreenSpec, deltas: dict[str, float]) -> dict[str, float]:
    """The tree's shares of one row as the column reads them (a parent: its children's sum)."""
    aliases = [c.alias for c in screen.counters]
    d = np.array([[deltas[a] for a in aliases]])
    st = np.zeros(d.shape, STATUS_DTYPE)
    out = Evaluator(screen, aliases).evaluate(
        _facts(1), CounterCells(d, st, d, st, np.ones(d.shape))
    )
    bp = BoundPath(parse_path(screen.columns[-1].expr), [c.header for c in screen.columns])
    shares = bp.shares(out.values, out.status)[0]
    assert bp.spec.tree is not None
    return dict(zip(bp.spec.tree.labels, shares.tolist(), strict=True))


def test_a_share_at_its_bound_is_not_over_it_up_to_rounding() -> None:
    """Bad speculation at exactly 15% of the slots, split 4:2996 between mispredicts and
    restarts: its children's shares add up to 0.15000000000000002, over a strict 0.15 by
    rounding alone. Read as perf's exact ``> 0.15``, nothing is over: '-'; 60 slots more
    (1e-8 of them) are over."""
    screen = _screen(Target("x86", "19_11"), "topdown2")
    deltas = _zen4_level2(0.15, 0.1, 0.15, MISP=4.0, RSY=2996.0)
    assert _shares(screen, deltas)["BAD"] == 0.15000000000000002  # the case, as read
    assert evaluate(screen, deltas)[3] == -1
    assert vendor_path("amdzen4", screen, deltas)[0] is None
    deltas["DISP"] += 60.0  # 1e-8 of the slots over
    labels = parse_path(screen.columns[-1].expr).labels
    assert labels[evaluate(screen, deltas)[3]] == "BAD/Rsync"


def test_shares_tied_up_to_rounding_go_to_the_earlier_node() -> None:
    """Front end and back end both at exactly 30% of the slots; as the children's sums
    the front end reads 0.29999999999999993 and the back end 0.30000000000000004. A tie:
    the front end, first in tree order (toplev's and perf's order), then its larger child."""
    screen = _screen(Target("x86", "19_11"), "topdown2")
    deltas = _zen4_level2(0.05, 0.3, 0.3, FEL=84000.0, LNC=4.0, NC=3000.0)
    shares = _shares(screen, deltas)
    assert (shares["FE"], shares["BE"]) == (0.29999999999999993, 0.30000000000000004)
    labels = parse_path(screen.columns[-1].expr).labels
    assert labels[evaluate(screen, deltas)[3]] == "FE/BW"
    assert vendor_path("amdzen4", screen, deltas)[0] == "frontend_bound_bandwidth"


def test_exceeds_is_strict_beyond_the_tolerance() -> None:
    assert not exceeds(0.20000000000000004, 0.2)
    assert not exceeds(0.2 + TOLERANCE / 2, 0.2)
    assert exceeds(0.2 + 2 * TOLERANCE, 0.2)
    assert not exceeds(math.nan, 0.2)
    assert exceeds(np.array([0.3, 0.2, math.nan]), 0.2).tolist() == [True, False, False]


def test_multiplexed_and_missing_counts_are_marked() -> None:
    """A count scaled from half the time: the same node, running 0.5 (the live view and
    csv mark it); a missing count: '?' with no value."""
    screen = _screen(Target("x86", "19_11"), "topdown2")
    deltas = _tied()
    full = evaluate(screen, deltas)
    half = evaluate(screen, deltas, running=0.5)
    assert half[0] == full[0] and half[3] == full[3] >= 0
    assert half[1] == Status.OK and half[2] == 0.5
    value, status, _, node = evaluate(screen, deltas, missing="LNC")
    assert status == Status.UNREADABLE and math.isnan(value) and node == -1
    fmt = row_format(tuple(screen.columns))
    n = len(screen.columns)
    cells = fmt.cells([0.0] * (n - 1) + [value], bytes([0] * (n - 1) + [status]))
    assert cells[-1].strip() == "?"


def test_cells_print_label_and_share_or_a_dash() -> None:
    screen = _screen(Target("x86", "06_8F"), "topdown2")
    fmt = row_format(tuple(screen.columns))
    n = len(screen.columns)
    labels = parse_path(screen.columns[-1].expr).labels
    mem = labels.index("BE/Mem")
    for value, node, text in ((41.2, mem, "BE/Mem 41%"), (0.0, -1, "-")):
        nodes = [-1] * (n - 1) + [node]
        cells = fmt.cells([1.0] * (n - 1) + [value], bytes(n), nodes)
        assert cells[-1] == text.rjust(len(screen.columns[-1].header))
        assert fmt.text([1.0] * (n - 1) + [value], bytes(n), nodes).endswith(cells[-1] + " ")


def test_batch_text_csv_and_json_show_node_and_share() -> None:
    """One task memory-bound, one with nothing over threshold, one unreadable: text shows
    the label and share, csv and json the share as the value and the node apart."""
    screen = builders.BOTTLENECK_SCREEN
    mem = parse_path(screen.columns[-1].expr).labels.index("BE/Mem")
    frame = builders.frame(
        [
            {
                "tid": 1,
                "cells": [90.0, 50.0, 41.0, 41.0],
                "node": [-1, -1, -1, mem],
                "name": "chase",
            },
            {"tid": 2, "cells": [80.0, 10.0, 5.0, 0.0], "name": "calm"},
            {
                "tid": 3,
                "cells": [70.0, 0.0, 0.0, 0.0],
                "name": "lost",
                "status": [Status.OK, Status.UNREADABLE, Status.UNREADABLE, Status.UNREADABLE],
            },
        ],
        screen,
    )
    out = io.StringIO()
    TextWriter(out, Options(), screen, 0).frame(frame, 0)
    lines = {ln.split()[-1]: ln for ln in out.getvalue().splitlines() if ln.strip()}
    assert "     BE/Mem 41% chase" in lines["chase"]
    assert "              - calm" in lines["calm"]
    assert "              ? lost" in lines["lost"]
    out = io.StringIO()
    w = RecordWriter(out, Options(format=Format.CSV), screen, 0, Format.CSV)
    w.begin(0.0)
    w.frame(frame, 0)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    head = rows[0]
    j = head.index("BOTTLENECK")
    assert head[j : j + 3] == ["BOTTLENECK", "BOTTLENECK_status", "BOTTLENECK_node"]
    got = {r[head.index("command")]: r[j : j + 3] for r in rows[1:]}
    assert got == {
        "chase": ["41.0", "ok", "BE/Mem"],
        "calm": ["0.0", "ok", "-"],
        "lost": ["", "unreadable", ""],
    }
    out = io.StringIO()
    RecordWriter(out, Options(format=Format.JSON), screen, 0, Format.JSON).frame(frame, 0)
    recs = {r["command"]: r for r in map(json.loads, out.getvalue().splitlines())}
    assert recs["chase"]["columns"]["BOTTLENECK"] == 41.0
    assert recs["chase"]["nodes"] == {"BOTTLENECK": "BE/Mem"}
    assert recs["lost"]["nodes"] == {"BOTTLENECK": None}


def test_plot_refuses_a_bottleneck_column() -> None:
    from tiptop.cli.plot import find_column
    from tiptop.errors import UsageError

    screen = _screen(Target("x86", "19_11"), "topdown")
    assert find_column(screen, "%BE") == 4
    with pytest.raises(UsageError, match="a bottleneck column names a top-down node"):
        find_column(screen, "bottleneck")


def test_sorting_by_the_column_groups_by_node_then_share() -> None:
    """The node is data apart from the share: sorting by the column puts tasks with no
    node first, then by node in tree order, then by share; a '?' cell last either way."""
    from tiptop.table import View, rows

    screen = builders.BOTTLENECK_SCREEN
    labels = parse_path(screen.columns[-1].expr).labels
    be, mem = labels.index("BE"), labels.index("BE/Mem")
    cells = {"a": (be, 30.0), "b": (mem, 20.0), "c": (-1, 0.0), "d": (be, 60.0), "e": (-1, 0.0)}
    tasks = [
        {"tid": t, "cells": [1.0, 1.0, 1.0, share], "node": [-1, -1, -1, node], "name": name}
        for t, (name, (node, share)) in enumerate(cells.items(), 1)
    ]
    tasks[-1]["status"] = [Status.OK] * 3 + [Status.UNREADABLE]
    frame = builders.frame(tasks, screen)
    assert be < mem  # tree order: level 1, then level 2
    up = View(show_idle=True, sort_column=3, descending=False)
    assert [r.command for r in rows(frame, screen, up)] == ["c", "a", "d", "b", "e"]
    down = View(show_idle=True, sort_column=3, descending=True)
    assert [r.command for r in rows(frame, screen, down)] == ["b", "d", "a", "c", "e"]
