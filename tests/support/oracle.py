"""The kernel's tables (tests/data/oracle/kernel-6.12.json, made by extract.py there) as the
built-in screens' variants see them: which models a gate admits, which of the kernel's
model lists they make up, which table directories they lead to, and event encodings."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.perfexpr import canonical
from tiptop.screens.build import RawScreen

PATH = Path(__file__).resolve().parents[1] / "data" / "oracle" / "kernel-6.12.json"
#: The fields compared: event select, unit mask, counter mask, edge, invert.
FIELDS = ("event", "umask", "cmask", "edge", "inv")


@functools.cache
def data() -> dict:
    """The vendored tables."""
    return json.loads(PATH.read_text())


def expand(gate: str) -> set[str]:
    """The ``FF_MM`` models a ``model`` gate admits (its tokens and ``FF_LO-FF_HI`` ranges;
    an Arm ``II_PPP:rVpR-rVpR`` token is its part, whose revisions share one table)."""
    out: set[str] = set()
    for tok in gate.split(";"):
        tok = tok.strip().split(":")[0]
        if m := re.fullmatch(r"([0-9A-F]+)_([0-9A-F]+)-([0-9A-F]+)_([0-9A-F]+)", tok):
            out |= {f"{m[1]}_{n:02X}" for n in range(int(m[2], 16), int(m[4], 16) + 1)}
        elif tok:
            out.add(tok)
    return out


def _x86_cpuid(model: str, stepping: int) -> str:
    fam, mod = (int(x, 16) for x in model.split("_"))
    vendor = "GenuineIntel" if fam == 6 else "AuthenticAMD"
    return f"{vendor}-{fam}-{mod:X}-{stepping:X}"


def _x86_dirs(model: str) -> set[str]:
    """mapfile.csv's table for each stepping of ``model`` (the first matching row wins, the
    pattern matching the whole id, with or without the stepping, as perf)."""
    out = set()
    for step in range(16):
        cpuid = _x86_cpuid(model, step)
        for pattern, d in data()["models"]["mapfile"]["x86"]:
            rx = pattern.replace("[[:xdigit:]]", "[0-9A-F]")
            if re.fullmatch(rx, cpuid) or re.fullmatch(rx, cpuid.rsplit("-", 1)[0]):
                out.add(d)
                break
    return out


def _arm_dirs(model: str) -> set[str]:
    impl, part = model.split("_")
    out = set()
    for midr, d in data()["models"]["mapfile"]["arm64"]:
        v = int(midr, 16)
        if (v >> 24) & 0xFF == int(impl, 16) and (v >> 4) & 0xFFF == int(part, 16):
            out.add(d)
    return out


def kernel_lists(raw: RawScreen) -> dict[str, set[str]]:
    """The kernel's model lists a variant's gate is made of: AMD: amd.c's Zen generations;
    Intel screens of perf metrics (``slots``): intel_pmu_init()'s cases; other Intel and Arm
    screens: mapfile.csv's rows."""
    m = data()["models"]
    if raw.arch == "arm64":
        rows: dict[str, set[str]] = {}
        for i, _d in m["mapfile"]["arm64"]:
            v = int(i, 16)
            rows.setdefault(i, set()).add(f"{(v >> 24) & 0xFF:02X}_{(v >> 4) & 0xFFF:03X}")
        return rows
    if raw.model and any(not x.startswith("06_") for x in expand(raw.model)):
        return {g: expand(";".join(r)) for g, r in m["amd.c"].items()}
    if any(i.attrs.get("config", "").endswith("slots") for i in raw.items):
        return {name: set(models) for name, models in m["core.c"].items()}
    rows = {}
    for fam_mod in (f"06_{n:02X}" for n in range(256)):
        for d in _x86_dirs(fam_mod):
            rows.setdefault(d, set()).add(fam_mod)
    return rows


def tables(raw: RawScreen, models: set[str]) -> set[str]:
    """The table directories ``models`` lead to (AMD: amdzenN of amd.c's ZENn; an Arm
    variant for any core: the architected events every Arm core may have)."""
    if raw.arch == "arm64" and not raw.model:
        return {"arm64/common-and-microarch"}
    if raw.arch == "arm64":
        return set().union(*(_arm_dirs(x) for x in models)) if models else set()
    out: set[str] = set()
    for x in models:
        if x.startswith("06_"):
            out |= _x86_dirs(x)
    for gen, ranges in data()["models"]["amd.c"].items():
        if expand(";".join(ranges)) & models:
            out.add("amdzen" + gen[3:])
    return out


@dataclass(frozen=True)
class Encoding:
    """An event's fields, the PMU it is for (``cpu``, ``cpu_core``), or a generic name."""

    fields: tuple[int, ...] | None
    pmu: str = "cpu"
    generic: str | None = None


def _terms(text: str) -> tuple[int, ...]:
    vals = dict.fromkeys(FIELDS, 0)
    for term in filter(None, text.split(",")):
        key, _, val = term.partition("=")
        vals[key.strip()] = int(val, 0) if val else 1
    return tuple(vals[k] for k in FIELDS)


def ours(config: str, type_: str | None, arch: str | None) -> Encoding:
    """What a counter's ``config`` (and ``type``) encode, by the kernel's own aliases."""
    if type_ == "RAW":
        v = int(config, 0)
        return Encoding(
            (v & 0xFF | (v >> 24 & 0xF00), v >> 8 & 0xFF, v >> 24 & 0xFF, v >> 18 & 1, v >> 23 & 1)
        )
    pmu = "cpu"
    if m := re.fullmatch(r"(\w+)/(.*)/", config):
        pmu, body = m[1], m[2]
        if "=" in body:
            return Encoding(_terms(body), pmu)
        config = body
    al = data()["aliases"]
    if arch == "arm64":
        return Encoding((al["arm_pmuv3"][config], 0, 0, 0, 0))
    if config in ("cycles", "instructions"):  # on its PMU: cpu_core/cycles/
        return Encoding(None, pmu, generic=config)
    return Encoding(_terms(al["cpu"][config]))


def theirs(table: str, name: str) -> Encoding | None:
    """A table event's fields (``name@cmask=0x6@`` adds a modifier), a core.c alias's (an
    arm_pmuv3.c alias's on Arm), or ``None`` when the table has no such event."""
    base, _, mods = canonical(name).partition("@")
    t = data()["tables"][table]
    events = {k.lower(): v for k, v in t["events"].items()}
    if base in ("cycles", "instructions"):
        return Encoding(None, generic=base)
    if base.lower() not in events and t["arch"] == "arm64":
        # perf finds a common event a table does not list by the PMU's events/ alias
        # (drivers/perf/arm_pmuv3.c): hip08's table lists no CPU_CYCLES, INST_RETIRED...
        number = data()["aliases"]["arm_pmuv3"].get(base.lower())
        return None if number is None else Encoding((number, 0, 0, 0, 0))
    if base.lower() not in events:
        al = data()["aliases"]["cpu_core" if base in data()["aliases"]["cpu_core"] else "cpu"]
        return Encoding(_terms(al[base])) if t["arch"] == "x86" and base in al else None
    e = events[base.lower()]
    fixed = {"Fixed counter 0": "instructions", "Fixed counter 1": "cycles"}
    if e.get("Counter") in fixed:  # event=0x00 pseudo-encodings of the generic events
        return Encoding(None, e.get("Unit", "cpu"), fixed[e["Counter"]])
    vals = {
        "event": int(e.get("EventCode", "0"), 16),
        "umask": int(e.get("UMask", "0"), 16),
        "cmask": int(e.get("CounterMask", "0"), 0),
        "edge": int(e.get("EdgeDetect", "0")),
        "inv": int(e.get("Invert", "0")),
    }
    for term in filter(None, mods.rstrip("@").split(",")):
        key, _, val = term.partition("=")
        vals[key] = int(val, 0)
    return Encoding(tuple(vals[k] for k in FIELDS), e.get("Unit", "cpu"))


def generic_fields(name: str) -> tuple[int, ...]:
    """Intel's encoding of a generic event (core.c ``intel_perfmon_event_map``)."""
    v = int(data()["aliases"]["generic"][name], 16)
    return (v & 0xFF, v >> 8 & 0xFF, 0, 0, 0)
