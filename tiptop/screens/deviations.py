"""Where a built-in screen differs on purpose from the vendors' tables that the Linux kernel
carries (perf's event tables and metrics, tools/perf/pmu-events/arch/; the model lists of
arch/x86/kernel/cpu/amd.c and arch/x86/events/intel/core.c): the one list, with reasons.

The oracle tests (tests/unit/test_oracle_*.py, tables in tests/data/oracle/) fail on any
other difference, and on a deviation listed here that no longer differs. Each entry is
shown in its screen's description (``builtin_gen`` appends it) and in docs/screens.md.
"""

from __future__ import annotations

from enum import StrEnum

from tiptop.readonly import by_value
from tiptop.screens.gating import gate
from tiptop.screens.model import Target, VariantChoice

__all__ = ["DEVIATIONS", "Deviation", "DeviationKind", "described", "for_variant", "smt_caveat"]


class DeviationKind(StrEnum):
    """What a :class:`Deviation` keeps apart (its word is the tests' and the docs')."""

    SCREEN = "screen"
    MODEL = "model"
    COLUMN = "column"
    THRESHOLD = "threshold"
    SMT = "smt"


@by_value
class Deviation:
    """One difference kept on purpose.

    ``screen`` and ``cpu`` name the variant (the first of that name whose gate admits
    ``cpu``, a ``family_model`` string); ``kind`` is ``"screen"`` (the variant is not
    compared at all), ``"model"`` (``subject``, ``;``-separated models, are in the gate
    though the kernel's lists or tables do not have them), ``"column"`` (the column
    headed ``subject`` does not show its ``table_metric``'s value) or ``"threshold"`` (the
    bottleneck column reads the threshold of node ``subject`` only in the terms whose
    nodes the screen counts; tests/unit/test_bottleneck.py checks that this explains
    every difference from perf's level-1 critical path) or ``"smt"`` (with SMT on, perf
    reads the variant's formulas in another form, which a per-task count cannot; the
    comparison is of the SMT-off form, and the plan says ``why`` where SMT is on:
    :func:`smt_caveat`).
    """

    screen: str
    cpu: str
    kind: DeviationKind
    subject: str
    why: str


_HYGON = (
    "Hygon family 18h: the Zen 1 core, driven as AMD's (arch/x86/events/core.c), "
    "in neither amd.c's Zen lists nor perf 6.12's mapfile"
)

_HEAVY_ICL = (
    "level 1 counts no heavy operations (perf's tma_heavy_operations here reads six more "
    "general-purpose counters: UOPS_ISSUED.ANY, UOPS_RETIRED.SLOTS, IDQ.MS_UOPS, "
    "IDQ.MITE_UOPS and UOPS_DECODED.DEC0 twice; with the screen's two that is all 8 of a "
    "thread with SMT off and twice the 4 with it on): retiring's second threshold term "
    "(tma_heavy_operations > 0.1) never fires here"
)
_HEAVY_RAW = (
    "level 1 counts no heavy operations (perf's tma_heavy_operations here reads one more "
    "event, IDQ.MS_UOPS, or UOPS_RETIRED.MACRO_FUSED from Skylake on: a fifth "
    "general-purpose counter where SMT on leaves four, and there is no topdown2): "
    "retiring's second threshold term (tma_heavy_operations > 0.1) never fires here"
)
_UCODE = (
    "level 1 counts no microcode ops (its six counters are taken): retiring's second "
    "threshold term (microcode over 10%, Intel's heavy operations) never fires here; "
    "topdown2 counts them"
)

_SMT_CORE = (
    "with SMT on, top-down before Ice Lake is a whole-core figure (pmu-tools#385: full TMA "
    "before Ice Lake requires the full core): the core's slots are shared by its two "
    "threads, and perf's per-task formulas then read its recovery cycles with the AnyThread "
    "bit (INT_MISC.RECOVERY_CYCLES_ANY), which the kernel grants only with CAP_PERFMON or "
    "perf_event_paranoid 0 or less and which counts whatever runs on the sibling "
    "(arch/x86/events/intel/core.c intel_pmu_hw_config, perf_allow_cpu); these cells are "
    "the thread's own counts over its own cycles, the sibling's use of the core not told "
    "apart: read them as approximate while the sibling is busy"
)

DEVIATIONS: tuple[Deviation, ...] = tuple(
    Deviation(screen, cpu, DeviationKind(kind), subject, why)
    for screen, cpu, kind, subject, why in (
        ("uOps", "06_2A", "screen", "", "the original's screen, verbatim (docs/original.md)"),
        (
            "FP",
            "06_2A",
            "screen",
            "",
            "the original's screen, verbatim (docs/original.md); on Sandy Bridge sp 0x4010 and "
            "dp 0x8010 count SSE packed single and scalar double (FP_COMP_OPS_EXE), and Assist "
            "0x1eca lacks FP_ASSIST.ANY's cmask=1 (sandybridge/floating-point.json)",
        ),
        (
            "mem",
            "06_2A",
            "screen",
            "",
            "the original's screen, verbatim (docs/original.md); on Nehalem and Westmere "
            "L1MissI 0x0081 is no event (L1I.MISSES is 0x0280: nehalemep/, westmere*/)",
        ),
        ("imix", "06_1A", "screen", "", "the original's screen, verbatim (docs/original.md)"),
        (
            "topdown",
            "06_BD",
            "model",
            "06_C5",
            "Arrow Lake-H: its perf metrics came to core.c after Linux 6.12",
        ),
        (
            "topdown2",
            "06_BD",
            "model",
            "06_C5",
            "Arrow Lake-H: its perf metrics came to core.c after Linux 6.12",
        ),
        ("topdown", "06_7E", "threshold", "RET", _HEAVY_ICL),
        ("topdown", "06_2A", "threshold", "RET", _HEAVY_RAW),
        ("topdown", "06_2A", "smt", "", _SMT_CORE),
        ("topdown", "19_11", "threshold", "RET", _UCODE),
        ("topdown", "1A_02", "threshold", "RET", _UCODE),
        (
            "fp",
            "17_01",
            "model",
            "18_00-18_FF",
            _HYGON,
        ),
        (
            "memory",
            "17_01",
            "model",
            "18_00-18_FF",
            _HYGON,
        ),
        (
            "fp",
            "06_97",
            "model",
            "06_B5",
            "Arrow Lake-U: Meteor Lake's P-core (one case in core.c), no mapfile row in 6.12",
        ),
    )
)


def for_variant(name: str, arch: str | None, model: str | None) -> tuple[Deviation, ...]:
    """The deviations of the built-in variant ``name`` gated by ``arch``/``model``."""
    if model is None:
        return ()
    out = []
    for d in DEVIATIONS:
        target = Target(arch, d.cpu)
        if d.screen == name and gate(arch, model, target) is None:
            out.append(d)
    return tuple(out)


def smt_caveat(choice: VariantChoice | None) -> str | None:
    """What the built-in variant picked in ``choice`` means with SMT on (its ``smt``
    deviation), or None when SMT does not change it (or no built-in variant was picked)."""
    if choice is None or choice.picked is None:
        return None
    _desc, arch, model = choice.variants[choice.picked]
    said = [d.why for d in for_variant(choice.name, arch, model) if d.kind is DeviationKind.SMT]
    return "; ".join(said) or None


def described(desc: str, devs: tuple[Deviation, ...]) -> str:
    """``desc`` with the deviations said after it (the help window and ``--check`` show it)."""
    if not devs:
        return desc
    said = "; ".join(f"{d.subject}: {d.why}" if d.subject else d.why for d in devs)
    return f"{desc} [differs from the kernel's tables: {said}]"
