"""tiptop.vocab: one table per concept of the perf_event vocabulary, read by the screens,
the event resolver and ``--list-events`` alike (so they cannot disagree)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiptop import diagnose, vocab
from tiptop.errors import SpecError
from tiptop.events import resolve, resolve_numeric
from tiptop.screens import evaluate_config
from tiptop.screens.build import parse_type

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screens.md"


def test_type_names_are_the_fixed_types_but_breakpoint() -> None:
    assert vocab.TYPE_NAMES == {
        "HARDWARE": 0,
        "SOFTWARE": 1,
        "TRACEPOINT": 2,
        "HW_CACHE": 3,
        "RAW": 4,
    }
    assert parse_type("HW_CACHE") == 3
    assert parse_type("5") == 5  # BREAKPOINT by number, as strtol would
    with pytest.raises(SpecError):
        parse_type("BREAKPOINT")


@pytest.mark.parametrize(
    ("type_", "config", "name"),
    [
        (0, 0, "cycles"),
        (0, 9, "ref-cycles"),
        (0, 10, None),
        (0, 1 | 8 << 32, None),  # a hybrid PMU type in config[63:32]
        (1, 1, "task-clock"),
        (1, 6, "major-faults"),
        (1, 11, "cgroup-switches"),
        (3, 0x10000, "L1-dcache-load-misses"),  # L1D | READ << 8 | MISS << 16
        (3, 0x00102, "LLC-stores"),  # LL | WRITE << 8 | ACCESS << 16
        (3, 0x00007, None),  # cache id 7 does not exist
        (3, 1 << 24, None),  # bits above 23 set
        (4, 0x1C2, "r1c2"),
        (9, 1, None),  # a dynamic PMU type
    ],
)
def test_event_name(type_: int, config: int, name: str | None) -> None:
    assert vocab.event_name(type_, config) == name


@pytest.mark.parametrize(
    ("type_", "config"),
    [(0, 0), (0, 7), (1, 2), (1, 11), (3, 0x10000), (3, 0x10005), (4, 0x1C2)],
)
def test_screens_and_resolver_name_numeric_events_alike(
    tmp_path: Path, type_: int, config: int
) -> None:
    """The bindings' labels come from the one table of perf-style names."""
    (binding,) = resolve_numeric(type_, config, sysfs_root=str(tmp_path))
    assert binding.name == vocab.event_name(type_, config)


def test_unnamed_events_get_their_numbers(tmp_path: Path) -> None:
    assert vocab.event_name(3, 0x7) is None
    (binding,) = resolve_numeric(3, 0x7, sysfs_root=str(tmp_path))
    assert binding.name == "hw_cache/0x7/"


def test_every_canonical_name_resolves_to_its_number(tmp_path: Path) -> None:
    root = str(tmp_path)
    for hw, name in vocab.HARDWARE_NAME.items():
        assert [(b.attr.type, b.attr.config) for b in resolve(name, sysfs_root=root)] == [(0, hw)]
    for sw, name in vocab.SOFTWARE_NAME.items():
        if name in vocab.SOFTWARE:
            assert [(b.attr.type, b.attr.config) for b in resolve(name, sysfs_root=root)] == [
                (1, sw)
            ]
    assert "bpf-output" not in vocab.SOFTWARE


def test_config_names_cover_the_enums() -> None:
    assert evaluate_config("STALLED_CYCLES_FRONTEND") == 7
    assert evaluate_config("REF_CPU_CYCLES") == 9
    assert evaluate_config("NODE | (OP_PREFETCH shl 8) | (RESULT_MISS shl 16)") == 0x10206
    assert len(vocab.CONFIG_NAMES) == 10 + 7 + 3 + 2


def test_upper_case_event_names_resolve(tmp_path: Path) -> None:
    (b,) = resolve("BRANCH_MISSES", sysfs_root=str(tmp_path))
    assert (b.attr.type, b.attr.config) == (0, 5)


def test_docs_list_every_config_name() -> None:
    text = DOCS.read_text()
    start = text.index("Predefined config names")
    para = text[start : text.index("\n\n", start)]
    listed = {m[0]: int(m[1]) for m in re.findall(r"`([A-Z0-9_]+)` (\d+)", para)}
    assert listed == vocab.CONFIG_NAMES


def test_list_events_names_are_known() -> None:
    assert diagnose.GENERIC[:2] == ("cycles", "instructions")
    assert len(diagnose.GENERIC) == 10
    assert "dummy" not in diagnose.SOFTWARE and "task-clock" in diagnose.SOFTWARE
    for name in diagnose.SOFTWARE:
        assert name in vocab.SOFTWARE
    for name in diagnose.CACHE:
        config = vocab.parse_cache_name(name)
        assert config is not None, name
        assert vocab.cache_name(config) == name  # perf's canonical spelling
