"""The built-in screens against the kernel's own tables (tests/data/oracle/kernel-6.12.json,
from Debian's linux-source-6.12 by tests/data/oracle/extract.py): every variant's counter
encodings equal its table events', its model gate is the kernel's model lists, and every
column naming a vendor metric shows that metric's value on random counts, the metric
evaluated by our own parser of perf's syntax (tests/support/perfexpr.py). The differences
kept on purpose are tiptop/screens/deviations.py; any other one fails. No PMU needed."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support import oracle
from tests.support.perfexpr import canonical, parse
from tiptop.cells import STATUS_DTYPE
from tiptop.screens.build import RawScreen
from tiptop.screens.builtin_data import SCREENS
from tiptop.screens.deviations import DEVIATIONS, Deviation, for_variant
from tiptop.screens.expr import compile_column
from tiptop.screens.model import delta_key

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screens.md"
#: What perf's ``#`` literals are for a per-task count: not system-wide, SMT off (the
#: per-thread forms); Arm's #slots is PMMIR_EL1.SLOTS (Neoverse N2 TRM: 5; V1, V2: 8;
#: AmpereOne, AmpereOneX: 4, the dispatch width their tables describe, tiptop/screens/
#: builtin/arm.yaml).
LITERALS = {"#SMT_on": 0.0, "#core_wide": 1.0}
ARM_SLOTS = {"41_D40": 8.0, "41_D49": 5.0, "41_D4F": 8.0, "C0_AC3": 4.0, "C0_AC4": 4.0}
#: The CPU id that ``strcmp_cpuid_str`` compares with for a variant of any revision: N2 from
#: r0p3 (the table's default form); a variant gated to revisions (``41_D49:r0p0-r0p2``) is
#: evaluated at each of its revisions instead (:func:`arm_cpuids`).
ARM_CPUID = {
    "41_D49": 0x410FD493,
    "41_D4F": 0x410FD4F0,
    "41_D40": 0x410FD400,
    "C0_AC3": 0xC00FAC30,
    "48_D01": 0x480FD010,
}


def variants() -> list[tuple[str, RawScreen]]:
    """Every gated built-in variant, as ``file:name:first-model``."""
    out = []
    for fname, raws in SCREENS.items():
        for raw in raws:
            if raw.model:
                first = raw.model.split(";")[0].split("-")[0]
                out.append((f"{fname}:{raw.name}:{first}", raw))
    return out


VARIANTS = variants()
IDS = [v[0] for v in VARIANTS]
#: Plus the Arm variants for any core, whose events are the architected ones.
ENCODED = VARIANTS + [
    (f"{f}:{r.name}:any", r)
    for f, rs in SCREENS.items()
    for r in rs
    if r.arch == "arm64" and not r.model
]


def devs(raw: RawScreen, kind: str) -> list[Deviation]:
    """The variant's deviations of ``kind``."""
    return [d for d in for_variant(raw.name or "", raw.arch, raw.model) if d.kind == kind]


def checked(raw: RawScreen) -> bool:
    """False for a variant kept out of the comparison as a whole (a "screen" deviation)."""
    return not devs(raw, "screen")


def gate_models(raw: RawScreen) -> set[str]:
    """The variant's models, less those listed as deviations."""
    extra = {m for d in devs(raw, "model") for m in oracle.expand(d.subject)}
    return oracle.expand(raw.model or "") - extra


@pytest.mark.parametrize(("vid", "raw"), VARIANTS, ids=IDS)
def test_gate_is_the_kernels_model_lists(vid: str, raw: RawScreen) -> None:
    """A gate is a union of whole kernel lists: no model of a list it touches dropped, none
    outside them added (but those listed as deviations, which must be outside)."""
    if not checked(raw):
        pytest.skip(f"{vid}: {devs(raw, 'screen')[0].why}")
    lists = oracle.kernel_lists(raw)
    known = set().union(*lists.values())
    gate = gate_models(raw)
    for d in devs(raw, "model"):
        for m in oracle.expand(d.subject):
            assert m in oracle.expand(raw.model or ""), f"{vid}: deviation {m} not in the gate"
            stale = (
                m in known
                and oracle.tables(raw, {m})
                and all(_has_events(raw, t) for t in oracle.tables(raw, {m}))
            )
            assert not stale, f"{vid}: {m} is in the kernel's lists now: drop the deviation"
    touched = {name for name, models in lists.items() if models & gate}
    union = set().union(*(lists[n] for n in touched)) if touched else set()
    assert gate - known == set(), f"{vid}: models the kernel does not list: {sorted(gate - known)}"
    assert union - gate == set(), (
        f"{vid}: models of {sorted(touched)} missing from the gate: {sorted(union - gate)}"
    )


def _has_events(raw: RawScreen, table: str) -> bool:
    return all(
        oracle.theirs(table, i.attrs["table_event"]) is not None
        for i in raw.items
        if i.kind == "counter" and i.attrs.get("table_event")
    )


@pytest.mark.parametrize(("vid", "raw"), ENCODED, ids=[v[0] for v in ENCODED])
def test_counters_encode_their_table_events(vid: str, raw: RawScreen) -> None:
    """Each counter with an encoding of its own names its table event, and the encoding is
    that event's in every table the variant's models lead to."""
    if not checked(raw):
        pytest.skip(f"{vid}: {devs(raw, 'screen')[0].why}")
    tables = oracle.tables(raw, gate_models(raw))
    assert tables or raw.arch == "x86", f"{vid}: no table"
    for item in (i for i in raw.items if i.kind == "counter"):
        a = item.attrs
        named = a.get("table_event")
        if named is None:
            generic = ("cycles", "instructions", "cpu_core/cycles/", "cpu_core/instructions/")
            assert a["config"] in generic, f"{vid}: {a['alias']} names no table event"
            continue
        item_tables = (
            oracle.tables(raw, gate_models(raw) & oracle.expand(a["model"]))
            if a.get("model")
            else tables
        )
        mine = oracle.ours(a["config"], a.get("type"), raw.arch)
        for t in sorted(item_tables):
            want = oracle.theirs(t, named)
            assert want is not None, f"{vid}: {a['alias']}: no {named} in {t}"
            got: tuple[int, ...] | str | None = mine.fields
            wanted: tuple[int, ...] | str | None = want.fields
            if mine.generic is not None and want.generic is None:
                got = oracle.generic_fields(mine.generic)
            elif want.generic is not None:
                got, wanted = mine.generic, want.generic
            assert got == wanted, f"{vid}: {a['alias']} {a['config']} is not {named} of {t}"
            if "/" in a["config"] and raw.arch == "x86":
                assert mine.pmu == want.pmu, f"{vid}: {a['alias']} on {mine.pmu}, {t}: {want.pmu}"


def _metric_value(
    table: dict[str, Any],
    name: str,
    counts: dict[str, float],
    lits: dict[str, float],
    cpuid: Callable[[str], float],
) -> float:
    """A metric's (or event's) value in ``table`` on ``counts`` (by canonical lower name)."""
    metrics = table["metrics"]
    if name in metrics:
        expr = parse(metrics[name]["MetricExpr"])
        return expr.value(lambda n: _metric_value(table, n, counts, lits, cpuid), lits, cpuid)
    return counts[canonical(name).lower()]


def _bound(raw: RawScreen) -> list[dict[str, str]]:
    return [i.attrs for i in raw.items if i.kind == "column" and i.attrs.get("table_metric")]


def arm_cpuids(raw: RawScreen) -> list[int]:
    """The MIDRs (variant and revision in bits 23:20 and 3:0) a variant is checked at: each
    revision of a ``II_PPP:rVpR-rVpR`` gate, else the part's :data:`ARM_CPUID`; ``[0]`` off
    Arm."""
    token = (raw.model or "").split(";")[0]
    part, _, revs = token.partition(":")
    base = ARM_CPUID.get(part, 0)
    if not revs:
        return [base]
    low, high = (int(r[1]) << 4 | int(r[3]) for r in revs.split("-"))
    return [base & ~0xF00000F | (rev >> 4) << 20 | rev & 0xF for rev in range(low, high + 1)]


def column_pairs(
    raw: RawScreen, table: str, seed: int, midr: int = 0
) -> list[tuple[str, float, float]]:
    """``(header, ours, theirs)`` for each bound column on one draw of random counts, the
    table's ``strcmp_cpuid_str`` answering for the Arm CPU id ``midr``."""
    rng = random.Random(seed)
    counters = [i.attrs for i in raw.items if i.kind == "counter"]
    counts: dict[str, float] = {}
    env = {}
    for c in counters:
        key = canonical(c.get("table_event") or c["config"]).lower()
        counts.setdefault(key, float(rng.randint(1_000, 1_000_000_000)))
        value = np.array([counts[key]])
        env[delta_key(c["alias"])] = (value, np.zeros(1, dtype=STATUS_DTYPE))
    model = (raw.model or "").split(";")[0].split(":")[0]
    lits = {**LITERALS, "#slots": ARM_SLOTS.get(model, math.nan)}

    def cpuid(text: str) -> float:  # arm64: this part at this revision or a later one
        want = int(text, 16)
        return float(want & ~0xF00000F == midr & ~0xF00000F and midr & 0xF >= want & 0xF)

    t = oracle.data()["tables"][table]
    out = []
    for col in _bound(raw):
        mine, _status = compile_column(col["expr"]).evaluate(env, 1)
        theirs = parse(col["table_metric"]).value(
            lambda n: _metric_value(t, n, counts, lits, cpuid), lits, cpuid
        )
        out.append((col["header"].strip(), float(mine[0]), theirs))
    return out


#: Plus the Arm variants for any core whose columns name a metric that Arm's own tables
#: define (arm/neoverse-*: ipc, l1d_cache_mpki...): checked in each table that has them.
BOUND = [v for v in VARIANTS if _bound(v[1])] + [
    v for v in ENCODED if v[0].endswith(":any") and _bound(v[1])
]


def candidate_tables(raw: RawScreen) -> list[str]:
    """The tables a variant's columns are checked in: its models' (an Arm variant for any
    core: every Arm table)."""
    if raw.arch == "arm64" and not raw.model:
        return sorted(t for t, v in oracle.data()["tables"].items() if v["arch"] == "arm64")
    return sorted(oracle.tables(raw, gate_models(raw)))


@pytest.mark.parametrize(("vid", "raw"), BOUND, ids=[v[0] for v in BOUND])
def test_columns_show_their_vendor_metrics(vid: str, raw: RawScreen) -> None:
    """On random counts each bound column equals its metric (perf's syntax over the table's
    metrics and events), in every table of the variant that defines them; a column listed
    as a deviation must differ."""
    kept = {d.subject for d in devs(raw, "column")}
    generic = {"instructions", "cycles"}  # perf's generic events, in no table
    tables = [
        t
        for t in candidate_tables(raw)
        if all(
            n in oracle.data()["tables"][t]["metrics"] or oracle.theirs(t, n) is not None
            for c in _bound(raw)
            for n in parse(c["table_metric"]).names - generic
        )
    ]
    assert tables, f"{vid}: no table defines its metrics"
    for t in tables:
        for midr, seed in ((m, s) for m in arm_cpuids(raw) for s in range(20)):
            for header, mine, theirs in column_pairs(raw, t, seed, midr):
                same = math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-9)
                if header in kept:
                    assert not same, f"{vid}: {header} now equals {t}'s metric: drop the deviation"
                else:
                    assert same, f"{vid} {t} {midr:#x} {seed}: {header} = {mine}, perf: {theirs}"


def test_every_deviation_names_a_variant_and_is_documented() -> None:
    """Each deviation belongs to a built-in variant and is said in docs/screens.md."""
    docs = DOCS.read_text()
    for d in DEVIATIONS:
        assert any(d in for_variant(r.name or "", r.arch, r.model) for _v, r in VARIANTS), d
        assert d.why in docs, f"docs/screens.md does not list: {d.why}"
