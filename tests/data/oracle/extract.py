"""Writes tests/data/oracle/kernel-6.12.json: the vendors' event tables, metrics and the
kernel's CPU model lists that the built-in screens are checked against
(tests/unit/test_oracle_*.py), trimmed to what those screens and the top-down trees use.

Source: Debian's ``linux-source-6.12`` package (``apt-get install linux-source-6.12``; the
tarball is /usr/src/linux-source-6.12.tar.xz), GPL-2.0. Run from the repository root::

    python3 tests/data/oracle/extract.py [/usr/src/linux-source-6.12.tar.xz]

Kept: for each table directory that a built-in variant's models lead to (mapfile.csv; AMD
Zen 2-5 by amd.c), the events the screens name (``table_event``) and every event the kept
metrics read; the metrics the screens name (``table_metric``), every top-down metric of
levels 1 and 2 (Intel ``TopdownL1``/``TopdownL2``, AMD ``PipelineL1``/``PipelineL2``, Arm
``TopdownL1`` and ``TopDownL1`` (hip08) and the Neoverse ``*_bound``, ``bad_speculation``,
``retiring``) and the metrics those read, with their thresholds. Arm ``ArchStdEvent``
entries are resolved; a table's own ``MetricExpr`` on one (AmpereOne's ``frontend_bound``)
wins.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.perfexpr import canonical, parse  # noqa: E402

TARBALL = "/usr/src/linux-source-6.12.tar.xz"
PREFIX = "linux-source-6.12/"
OUT = HERE / "kernel-6.12.json"
EV = "tools/perf/pmu-events/arch/"
FILES = (
    "arch/x86/kernel/cpu/amd.c",
    "arch/x86/events/intel/core.c",
    "arch/x86/include/asm/intel-family.h",
    "drivers/perf/arm_pmuv3.c",
    "include/linux/perf/arm_pmuv3.h",
)
EVENT_KEYS = ("EventCode", "UMask", "CounterMask", "EdgeDetect", "Invert", "Unit", "Counter")
METRIC_KEYS = ("MetricExpr", "MetricThreshold", "MetricGroup", "ScaleUnit", "Unit")
TOPDOWN_GROUPS = {"TopdownL1", "TopdownL2", "PipelineL1", "PipelineL2", "TopDownL1"}
ARM_TOPDOWN = {"frontend_bound", "backend_bound", "bad_speculation", "retiring"}


def read_tree(tarball: str) -> dict[str, str]:
    """The text of the wanted files of the tarball, by path below its top directory."""
    wanted: dict[str, str] = {}
    with tarfile.open(tarball, "r:xz") as tar:
        for m in tar:
            name = m.name.removeprefix(PREFIX)
            keep = name in FILES or (
                name.startswith((EV + "x86/", EV + "arm64/")) and name.endswith((".json", ".csv"))
            )
            if keep and m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                wanted[name] = f.read().decode()
    return wanted


def amd_models(src: str) -> dict[str, list[str]]:
    """amd.c bsp_init_amd(): ``ZENn`` -> ``FF_LO-FF_HI`` ranges (X86_FEATURE_ZENn)."""
    body = src[src.index("/* Figure out Zen generations: */") :]
    out: dict[str, list[str]] = {}
    family, ranges = None, []
    for line in body.splitlines():
        if m := re.match(r"\s*case 0x([0-9a-f]+):\s*$", line):
            family = int(m[1], 16)
        elif m := re.match(r"\s*case 0x([0-9a-f]+) \.\.\. 0x([0-9a-f]+):", line):
            ranges.append(f"{family:02X}_{int(m[1], 16):02X}-{family:02X}_{int(m[2], 16):02X}")
        elif m := re.search(r"setup_force_cpu_cap\(X86_FEATURE_(ZEN\d)\)", line):
            out[m[1]] = ranges
            ranges = []
        elif "bsp_determine_snp" in line:
            break
    return out


def intel_family(src: str) -> dict[str, str]:
    """intel-family.h: ``INTEL_X`` -> ``06_XX``."""
    out = {}
    for m in re.finditer(r"#define (INTEL_\w+)\s+IFM\((\d+), 0x([0-9A-Fa-f]+)\)", src):
        out[m[1]] = f"{int(m[2]):02X}_{int(m[3], 16):02X}"
    return out


def intel_blocks(src: str, family: dict[str, str]) -> dict[str, list[str]]:
    """intel_pmu_init()'s model switch: each ``name = "..."`` with the models whose cases
    lead to it (fallthrough included), as ``06_XX``."""
    body = src[src.index("__init int intel_pmu_init(void)") :]
    body = body[body.index("switch (boot_cpu_data.x86_vfm)") :]
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for line in body.splitlines():
        if m := re.match(r"\s*case (INTEL_\w+):", line):
            pending.append(family[m[1]])
        elif m := re.match(r'\s*name = "(\w+)";', line):
            out.setdefault(m[1], []).extend(pending)
            pending = []
        elif re.match(r"\s*default:", line):
            break
    return out


def intel_aliases(src: str) -> dict[str, dict[str, str]]:
    """core.c's sysfs aliases of the perf-metrics PMUs (``EVENT_ATTR_STR``: ``slots``,
    ``topdown-*``; the hybrids' ``EVENT_ATTR_STR_HYBRID`` cpu_core half) and the generic
    events (``intel_perfmon_event_map``)."""
    core: dict[str, str] = {}
    for m in re.finditer(r'EVENT_ATTR_STR\((slots|topdown-[\w-]+),\s*\w+,\s*"([^"]+)"\);', src):
        if m[1] not in core:
            core[m[1]] = m[2]
    hybrid: dict[str, str] = {}
    hybrid_attr = r'EVENT_ATTR_STR_HYBRID\((slots|topdown-[\w-]+),\s*(\w+),\s*"([^"]+)"'
    for m in re.finditer(hybrid_attr, src):
        if m[2].endswith("_adl"):
            hybrid[m[1]] = m[3].split(";")[-1]
    table = src[src.index("intel_perfmon_event_map[") :]
    table = table[: table.index("};")]
    names = {"CPU_CYCLES": "cycles", "INSTRUCTIONS": "instructions"}
    generic = {
        names[m[1]]: m[2]
        for m in re.finditer(r"\[PERF_COUNT_HW_(\w+)\]\s*=\s*(0x[0-9a-f]+)", table)
        if m[1] in names
    }
    return {"cpu": core, "cpu_core": hybrid, "generic": generic}


def arm_aliases(driver: str, header: str) -> dict[str, int]:
    """arm_pmuv3.c's ``events/`` aliases with their event numbers (arm_pmuv3.h)."""
    numbers = {
        m[1]: int(m[2], 16)
        for m in re.finditer(r"#define (ARMV8_PMUV3_PERFCTR_\w+)\s+(0x[0-9A-Fa-f]+)", header)
    }
    return {
        m[1]: numbers[m[2]]
        for m in re.finditer(r"ARMV8_EVENT_ATTR\((\w+), (ARMV8_PMUV3_PERFCTR_\w+)\)", driver)
        if m[2] in numbers
    }


def mapfile(text: str) -> list[list[str]]:
    """mapfile.csv rows: ``[cpuid pattern, table directory]``, in order (the first match wins)."""
    rows = []
    for line in text.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            cols = line.split(",")
            if cols[3].strip() == "core":
                rows.append([cols[0], cols[2]])
    return rows


def table(tree: dict[str, str], arch: str, d: str) -> tuple[dict, dict]:
    """A table directory's events and metrics by name, Arm ``ArchStdEvent`` resolved."""
    std: dict[str, dict] = {}
    if arch == "arm64":
        for f in ("common-and-microarch.json", "recommended.json", "sbsa.json"):
            for e in json.loads(tree[f"{EV}arm64/{f}"]):
                key = e.get("EventName") or e.get("MetricName")
                std[key.lower()] = e
    events: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for path, text in tree.items():
        if not path.startswith(f"{EV}{arch}/{d}/") or not path.endswith(".json"):
            continue
        for e in json.loads(text):
            if "ArchStdEvent" in e:
                e = {**std[e["ArchStdEvent"].lower()], **e}
            if "MetricName" in e and e.get("MetricExpr"):
                metrics[e["MetricName"]] = {k: e[k] for k in METRIC_KEYS if e.get(k)}
            elif "EventName" in e:
                ev = {k: e[k] for k in EVENT_KEYS if e.get(k) is not None}
                events.setdefault(e["EventName"], ev)
    return events, metrics


def screen_names() -> tuple[set[str], set[str]]:
    """The event and metric names the built-in screens name (``table_event``,
    ``table_metric``), canonical."""
    from tiptop.screens.builtin_data import SCREENS

    evs: set[str] = set()
    mets: set[str] = set()
    for raws in SCREENS.values():
        for raw in raws:
            for item in raw.items:
                if te := item.attrs.get("table_event"):
                    evs.add(canonical(te).split("@")[0])
                if tm := item.attrs.get("table_metric"):
                    mets |= parse(tm).names
    return evs, mets


def trim(events: dict, metrics: dict, want_ev: set[str], want_met: set[str]) -> tuple[dict, dict]:
    """The wanted metrics and the top-down ones, with what they read, and the events named."""
    keep: set[str] = set()
    todo = [
        n
        for n, m in metrics.items()
        if n in want_met
        or n in ARM_TOPDOWN
        or TOPDOWN_GROUPS & set(m.get("MetricGroup", "").split(";"))
    ]
    lower = {k.lower(): k for k in events}
    while todo:
        n = todo.pop()
        if n in keep or n not in metrics:
            continue
        keep.add(n)
        for field in ("MetricExpr", "MetricThreshold"):
            if field in metrics[n]:
                for name in parse(metrics[n][field]).names:
                    base = name.split("@")[0]
                    if base in metrics:
                        todo.append(base)
                    elif base.lower() in lower:
                        want_ev = want_ev | {lower[base.lower()]}
    kept_ev = {
        k: v for k, v in events.items() if k in want_ev or k.lower() in {w.lower() for w in want_ev}
    }
    return kept_ev, {k: metrics[k] for k in sorted(keep)}


#: The Arm tables with a top-down level 1 in perf 6.12 (hip08 spells its group
#: ``TopDownL1``), besides Arm's own Neoverse ones.
ARM_TOPDOWN_DIRS = {"ampere/ampereone", "ampere/ampereonex", "hisilicon/hip08"}


def dirs_used(rows: list[list[str]], arch: str) -> set[str]:
    """Table directories the built-in variants' models lead to (every Intel and Arm row,
    AMD Zen 2-5): all of them but the ones no screen can reach are small enough to keep."""
    if arch == "arm64":
        return {d for _id, d in rows if d.startswith("arm/neoverse") or d in ARM_TOPDOWN_DIRS}
    return {d for _id, d in rows}


def main(argv: list[str]) -> int:
    """Write the trimmed tables; 0 when done."""
    tarball = argv[1] if len(argv) > 1 else TARBALL
    tree = read_tree(tarball)
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "linux-source-6.12"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    want_ev, want_met = screen_names()
    family = intel_family(tree["arch/x86/include/asm/intel-family.h"])
    out: dict = {
        "origin": {
            "package": "linux-source-6.12 (Debian)",
            "version": version or "unknown",
            "tarball": tarball,
            "files": [
                *FILES,
                EV + "x86/mapfile.csv",
                EV + "arm64/mapfile.csv",
                EV + "{x86,arm64}/<table>/*.json",
            ],
            "license": "GPL-2.0 (the Linux kernel's COPYING); extracts of the kernel's perf "
            "event tables and source, kept for tests only",
            "made_by": "tests/data/oracle/extract.py",
        },
        "models": {
            "amd.c": amd_models(tree["arch/x86/kernel/cpu/amd.c"]),
            "core.c": intel_blocks(tree["arch/x86/events/intel/core.c"], family),
            "mapfile": {
                "x86": mapfile(tree[EV + "x86/mapfile.csv"]),
                "arm64": mapfile(tree[EV + "arm64/mapfile.csv"]),
            },
        },
        "aliases": {
            **intel_aliases(tree["arch/x86/events/intel/core.c"]),
            "arm_pmuv3": arm_aliases(
                tree["drivers/perf/arm_pmuv3.c"], tree["include/linux/perf/arm_pmuv3.h"]
            ),
        },
        "tables": {},
    }
    for arch in ("x86", "arm64"):
        for d in sorted(dirs_used(out["models"]["mapfile"][arch], arch)):
            events, metrics = table(tree, arch, d)
            ev, met = trim(events, metrics, want_ev, want_met)
            out["tables"][d] = {"arch": arch, "events": ev, "metrics": met}
    # The architected events every Arm core may have (no model: the generic Arm variants).
    common = {
        e["EventName"]: {k: e[k] for k in EVENT_KEYS if e.get(k) is not None}
        for e in json.loads(tree[EV + "arm64/common-and-microarch.json"])
    }
    ev, _ = trim(common, {}, want_ev, set())
    out["tables"]["arm64/common-and-microarch"] = {"arch": "arm64", "events": ev, "metrics": {}}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
