"""Built-in screens: the original's data verbatim, gating, every expression compiles and
reads only declared counters, widths line up; the config-file lookup order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiptop.screens import (
    BUILTINS,
    NamedEvent,
    NumericEvent,
    ScreenSpec,
    Target,
    builtin_screens,
    compile_column,
    export_yaml,
    find_config,
    load_text,
)
from tiptop.screens.bottleneck import is_path, parse_path
from tiptop.screens.loader import BUILTIN_FILES
from tiptop.screens.model import ConfigSpec
from tiptop.screens.timetree import TIME_LABELS

TARGETS = [
    Target(),
    Target("arm64", None),
    Target("x86", "BF_44"),  # this VM (AMD family 0x1A in the original's encoding)
    Target("x86", "06_1E"),  # Nehalem
    Target("x86", "06_25"),  # Westmere
    Target("x86", "06_2A"),  # Sandy Bridge
    Target("x86", "06_3F"),  # Haswell-EP
    Target("x86", "06_55"),  # Skylake-SP
    Target("x86", "06_8F"),  # Sapphire Rapids
]


def by_name(target: Target) -> dict[str, ScreenSpec]:
    return {s.name: s for s in builtin_screens(target)}


def named_events(screen: ScreenSpec) -> list[str]:
    """The perf names of a screen's counters, in order (every one a :class:`NamedEvent`)."""
    assert all(isinstance(c.event, NamedEvent) for c in screen.counters)
    return [c.event.name for c in screen.counters]  # type: ignore[union-attr]


def cols(s: ScreenSpec) -> list[tuple[str, str, str, str]]:
    return [(c.header, c.format, c.desc, c.expr) for c in s.columns]


def test_default_is_the_original() -> None:
    s = builtin_screens(Target())[0]
    assert (s.name, s.desc) == ("default", "Screen by default")
    assert [(c.alias, c.event) for c in s.counters] == [
        ("CYCLE", NumericEvent(0, 0)),
        ("INSN", NumericEvent(0, 1)),
        ("MISS", NumericEvent(0, 3)),
        ("BR", NumericEvent(0, 5)),
        ("BUS", NumericEvent(0, 6)),
    ]
    assert cols(s) == [
        (" %CPU", "%5.1f", "Total CPU usage", "CPU_TOT"),
        (" %SYS", "%5.1f", "System CPU usage", "CPU_SYS"),
        ("   P", " %3.0f", "Processor where last seen", "PROC_ID"),
        ("  Mcycle", "%8.2f", "Cycles (millions)", "delta(CYCLE) / 1e6"),
        ("  Minstr", "%8.2f", "Instructions (millions)", "delta(INSN) / 1e6"),
        ("  IPC", " %4.2f", "Executed instructions per cycle", "delta(INSN)/delta(CYCLE)"),
        (" %MISS", "%6.2f", "Cache miss per 100 instructions", "100*delta(MISS)/delta(INSN)"),
        (
            " %BMIS",
            "%6.2f",
            "Mispredicted branches per 100 instructions",
            "100*delta(BR)/delta(INSN)",
        ),
        (" %BUS", "%5.1f", "Bus cycles per executed instruction", "delta(BUS)/delta(INSN)"),
    ]
    # the original's batch header: '  PID [ %CPU] %SYS    P   Mcycle ...' (one space
    # between columns, the sort column's brackets in place of the spaces around it)
    assert " ".join(c.header for c in s.columns[1:]) == (
        " %SYS    P   Mcycle   Minstr   IPC  %MISS  %BMIS  %BUS"
    )


def test_branch_is_the_original() -> None:
    s = builtin_screens(Target())[1]
    assert (s.name, s.desc) == ("branch", "Branch prediction statistics")
    assert [(c.alias, c.event) for c in s.counters] == [
        ("INSTR", NumericEvent(0, 1)),
        ("BR", NumericEvent(0, 4)),
        ("BMISS", NumericEvent(0, 5)),
    ]
    assert cols(s) == [
        ("  %CPU", " %5.1f", "CPU usage", "CPU_TOT"),
        (
            "   %MIS/I",
            "   %6.2f",
            "Mispredictions per 100 instructions",
            "100 * delta(BMISS) / delta(INSTR)",
        ),
        (
            "   %MISP",
            "   %5.2f",
            "Mispredictions per 100 branch instructions",
            "100 * delta(BMISS) / delta(BR)",
        ),
        (
            "  %BR/I",
            "  %5.1f",
            "Proportion of branch instructions",
            "100 * delta(BR) / delta(INSTR)",
        ),
    ]


@pytest.mark.parametrize(
    ("target", "names"),
    [
        (Target(), ["default", "branch", "cache", "topdown", "sched", "state"]),
        (Target("x86", "BF_44"), ["default", "branch", "cache", "topdown", "sched", "state"]),
        (
            Target("x86", "06_1E"),
            [
                "default",
                "branch",
                "uOps",
                "FP",
                "mem",
                "imix",
                "fp",
                "cache",
                "topdown",
                "sched",
                "state",
            ],
        ),
        (
            Target("x86", "06_2A"),
            ["default", "branch", "uOps", "FP", "mem", "fp", "cache", "topdown", "sched", "state"],
        ),
        (
            Target("x86", "06_3F"),
            ["default", "branch", "fp", "cache", "topdown", "memory", "sched", "state"],
        ),
        (
            Target("x86", "06_8F"),
            ["default", "branch", "cache", "topdown", "topdown2", "fp", "sched", "state"],
        ),
    ],
)
def test_screens_offered_per_cpu(target: Target, names: list[str]) -> None:
    assert [s.name for s in builtin_screens(target)] == names


def test_model_specific_variants() -> None:
    snb, nhm = by_name(Target("x86", "06_2A")), by_name(Target("x86", "06_1E"))
    # docs/original.md 4 (target-x86.c): Assist is 0x1eca on A-2 and 0x01f7 on;
    # macrof and L2d* not on A-2
    assert snb["FP"].counter("Assist").event == NumericEvent(4, 0x1ECA)
    assert nhm["FP"].counter("Assist").event == NumericEvent(4, 0x01F7)
    assert [c.header for c in snb["uOps"].columns][-1] == "  uPI"
    assert [c.header for c in nhm["uOps"].columns][-1] == " macrof"
    assert snb["mem"].counter("L1MissI").event == NumericEvent(4, 0x0280)
    assert nhm["mem"].counter("L1MissI").event == NumericEvent(4, 0x0081)
    assert len(snb["mem"].columns) == 8 and len(nhm["mem"].columns) == 10
    # fp: FP_ASSIST.ALL on Nehalem, FP_ASSIST.ANY (cmask 1) from Sandy Bridge on
    assert nhm["fp"].counter("A").event == NumericEvent(4, 0x01F7)
    assert snb["fp"].counter("A").event == NamedEvent("cpu/event=0xca,umask=0x1e,cmask=1/")
    # topdown: perf metrics on Icelake+ with perf's tma_* corrections (INT_MISC.UOP_DROPPING,
    # 0x0d/0x10 on Ice Lake, 0xad/0x10 from Sapphire Rapids; INT_MISC.CLEARS_COUNT on Ice
    # Lake..Rocket Lake), raw 4-wide before, generic elsewhere; from Sapphire Rapids on,
    # heavy operations too (a metric field: no counter) for retiring's threshold
    assert named_events(by_name(Target("x86", "06_8F"))["topdown"]) == [
        "slots",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
        "topdown-heavy-ops",
        "cpu/event=0xad,umask=0x10/",
    ]
    assert named_events(by_name(Target("x86", "06_7E"))["topdown"])[5:] == [
        "cpu/event=0x0d,umask=0x10/",
        "cpu/event=0x0d,umask=0x01,edge=1,cmask=1/",
    ]
    hsw, skx = by_name(Target("x86", "06_3F")), by_name(Target("x86", "06_55"))
    assert hsw["topdown"].counter("REC").event == NamedEvent("cpu/event=0x0d,umask=0x03,cmask=1/")
    # skylake/skylakex/cascadelakex pipeline.json: INT_MISC.RECOVERY_CYCLES has no CounterMask
    assert skx["topdown"].counter("REC").event == NamedEvent("cpu/event=0x0d,umask=0x01/")
    assert named_events(by_name(Target())["topdown"]) == [
        "cycles",
        "instructions",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
    ]
    assert len(hsw["memory"].counters) == 6


def test_sched_needs_no_pmu() -> None:
    s = by_name(Target())["sched"]
    assert all(isinstance(c.event, NamedEvent) for c in s.counters)
    assert {c.event.name for c in s.counters} <= {  # type: ignore[union-attr]
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    }
    assert any("INTERVAL" in c.expr for c in s.columns)


@pytest.mark.parametrize("target", TARGETS)
def test_every_expression_compiles_on_declared_counters(target: Target) -> None:
    for s in builtin_screens(target):
        declared = {c.alias for c in s.counters}
        used: set[str] = set()
        assert s.source == "builtin"
        for col in s.columns:
            expr = compile_column(col.expr)
            assert expr.aliases <= declared, (s.name, col.header)
            assert expr.builtins <= set(BUILTINS)
            used |= expr.aliases
            # every cell prints at its header's width (placeholders use that width too); a
            # bottleneck cell at most that wide, its longest label at 100% (a level-2 label
            # shows only where its siblings all have columns: BoundPath.walk)
            if is_path(col.expr):
                spec = parse_path(col.expr)
                nodes = spec.tree.nodes if spec.tree is not None else ()
                given = {lab for lab, _ in spec.columns}
                parents = {lab.rpartition("/")[0] for lab in given if "/" in lab}
                full = {p for p in parents if {n.label for n in nodes if n.parent == p} <= given}
                shown = {lab for lab in given if lab.rpartition("/")[0] in full | {""}} | parents
                shown |= set(TIME_LABELS[:-1])  # the time level's; Sleep shows as "-"
                widest = max(len(f"{lab} {col.format % 100}") for lab in shown)
                assert widest <= len(col.header), (s.name, col.header)
                assert set(dict(parse_path(col.expr).columns).values()) <= {
                    c.header.strip() for c in s.columns
                }, (s.name, "a node's column is not on the screen")
            else:
                assert len(col.format % 0.5) == len(col.header), (s.name, col.header)
        assert used == declared, s.name  # no unused counter takes an fd


@pytest.mark.parametrize("target", TARGETS)
def test_builtin_files_load_without_errors(target: Target) -> None:
    from importlib import resources

    pkg = resources.files("tiptop.screens").joinpath("builtin")
    for name in BUILTIN_FILES:
        cfg = load_text(pkg.joinpath(name).read_bytes(), target, yaml=True)
        bad = [
            e
            for e in cfg.problems
            if "mismatch)" not in e.message and "skipped on this CPU" not in e.message
        ]
        assert bad == [], name


def test_builtins_export_and_reload() -> None:
    target = Target("x86", "06_1E")
    screens = builtin_screens(target)
    again = load_text(export_yaml(ConfigSpec(screens=screens)), target, yaml=True)
    assert [s.name for s in again.screens] == [s.name for s in screens]
    assert [cols(s) for s in again.screens] == [cols(s) for s in screens]


def test_find_config_order(tmp_path: Path) -> None:
    home, cwd, xdg, wdir, tdir = (tmp_path / n for n in ("home", "cwd", "xdg", "w", "t"))
    for d in (home, cwd, xdg / "tiptop", wdir, tdir):
        d.mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert find_config(None, env, str(cwd), str(home)) is None
    files = [
        home / ".tiptoprc",
        xdg / "tiptop" / "tiptoprc",
        xdg / "tiptop" / "tiptop.yaml",
        cwd / ".tiptoprc",
        tdir / ".tiptoprc",
        wdir / ".tiptoprc",
    ]
    for f in files:  # each new file outranks all the ones before it
        f.write_text("<tiptop/>")
        got = find_config(str(wdir), {**env, "TIPTOP": str(tdir)}, str(cwd), str(home))
        assert got == str(f)
    # -W and $TIPTOP may name a file; a relative one is taken from cwd
    (cwd / "mine.yaml").write_text("")
    assert find_config("mine.yaml", env, str(cwd), str(home)) == str(cwd / "mine.yaml")
    assert find_config(None, {"TIPTOP": str(cwd / "mine.yaml")}, str(cwd), str(home)) == str(
        cwd / "mine.yaml"
    )
    # no XDG_CONFIG_HOME: ~/.config
    (home / ".config" / "tiptop").mkdir(parents=True)
    (home / ".config" / "tiptop" / "tiptoprc").write_text("")
    os.remove(cwd / ".tiptoprc")
    assert find_config(None, {}, str(cwd), str(home)) == str(home / ".config/tiptop/tiptoprc")


def test_find_config_skips_what_it_cannot_read_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory, a FIFO or a file without read permission where a config file is
    looked for is skipped, as the original does, with one note each (issue 15, item 7)."""
    cwd, home, wdir = tmp_path / "cwd", tmp_path / "home", tmp_path / "w"
    xdg = home / ".config" / "tiptop"
    for d in (cwd / ".tiptoprc", xdg, wdir):
        d.mkdir(parents=True)
    os.mkfifo(xdg / "tiptop.yaml")
    (xdg / "tiptoprc").write_text("<tiptop/>")
    (home / ".tiptoprc").write_text("<tiptop/>")
    notes: list[str] = []
    assert find_config(str(wdir), {}, str(cwd), str(home), notes) == str(xdg / "tiptoprc")
    assert notes == [
        f"-W: no .tiptoprc in '{wdir}': looking further",
        f"'{cwd}/.tiptoprc' is not a regular file: skipped",
        f"'{xdg}/tiptop.yaml' is not a regular file: skipped",
    ]
    # Another user's mode-000 file (as root, access(2) grants it: tests/system covers it).
    readable = os.access
    monkeypatch.setattr(os, "access", lambda p, m: readable(p, m) and "tiptoprc" not in str(p))
    notes.clear()
    assert find_config(None, {}, str(cwd), str(home), notes) is None
    assert notes[-2:] == [
        f"'{xdg}/tiptoprc': no permission to read it: skipped",
        f"'{home}/.tiptoprc': no permission to read it: skipped",
    ]


CPUINFO = Path(__file__).resolve().parents[1] / "data" / "cpuinfo"
#: Each cpuinfo fixture (``NAME-MODEL``) and what its level-1 ``topdown`` says it is for.
FIXTURES = {
    "qemu-epyc-17_01": "generic events",
    "zen4-19_11": "AMD Zen 4",
    "cascadelake-06_55": "Sandy Bridge..Cascade Lake",
    "sapphirerapids-06_8F": "Sapphire Rapids+",
    "alderlake-06_97": "Intel hybrid",
    "ampereone-C0_AC3": "AmpereOne",
    "ampereonex-C0_AC4": "AmpereOne",
    "hip08-48_D01": "hip08",
    "intel-06_A7": "Intel Ice Lake..Rocket Lake",
    "neoverse-n2-41_D49": "Arm Neoverse N2 r0p3 and later",
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_cpuinfo_fixtures_name_their_model_and_variant(name: str, tmp_path: Path) -> None:
    """tests/data/cpuinfo/NAME-MODEL reads as MODEL (on the machine its text is from: Arm
    fields or x86 ones), and that CPU gets the topdown variant written for it; every
    fixture is listed here (TIPTOP_TEST_CPUINFO may name any of them)."""
    from tiptop.cli.screens import host_target

    assert sorted(f.name for f in CPUINFO.iterdir() if f.name != "README.md") == sorted(FIXTURES)
    path = CPUINFO / name
    machine = "aarch64" if "CPU implementer" in path.read_text() else "x86_64"
    target = host_target(str(path), machine=machine, midr=str(tmp_path / "absent"))
    assert target.model == name.rsplit("-", 1)[1]
    desc = by_name(target)["topdown"].desc
    assert FIXTURES[name] in desc, desc
