"""``--where``'s parts on made-up input: ring-buffer records (samples, lost counts, a cut
record), ``/proc/PID/maps`` and perf map lines, names of special mappings, buffer sizes,
the text writer's lines; and the ELF symbols of this interpreter's own executable."""

from __future__ import annotations

import io
import os
import struct
import sys

import pytest

from tiptop.choices import Format
from tiptop.kernel.ring import RECORD_LOST, RECORD_SAMPLE, parse
from tiptop.outputs.where import WhereWriter
from tiptop.where import Hot, Profile
from tiptop.where.elf import SymbolCache, SymbolTable, read_table
from tiptop.where.functions import from_entries
from tiptop.where.jitmap import parse_lines
from tiptop.where.profile import BUFFER_BUDGET, data_pages
from tiptop.where.report import OTHER, profile_lines
from tiptop.where.resolve import ANON, UNKNOWN, Resolver, parse_maps


def sample(ip: int, tid: int) -> bytes:
    return struct.pack("<IHHQII", RECORD_SAMPLE, 0, 24, ip, tid, tid)


def lost(n: int) -> bytes:
    return struct.pack("<IHHQQ", RECORD_LOST, 0, 24, 7, n)


def test_records_samples_and_lost_counts() -> None:
    data = sample(0x1000, 5) + lost(12) + struct.pack("<IHH", 3, 0, 16) + b"x" * 8
    data += sample(0x2000, 6)
    drained = parse(data)
    assert drained.ips == [0x1000, 0x2000] and drained.tids == [5, 6] and drained.lost == 12


def test_a_record_that_does_not_fit_is_counted_lost_and_ends_the_read() -> None:
    data = sample(0x1000, 5) + struct.pack("<IHH", RECORD_SAMPLE, 0, 200) + b"\0" * 16
    drained = parse(data)
    assert drained.ips == [0x1000] and drained.lost == 1


MAPS = """\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/prog
55d0c0001000-55d0c0002000 r-xp 00001000 08:01 123 /usr/bin/prog
7f0000000000-7f0000001000 rwxp 00000000 00:00 0
7f0000002000-7f0000003000 r-xp 00000000 00:00 0 /tmp/gone (deleted)
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
"""


def test_maps_keep_executable_lines_only() -> None:
    maps = parse_maps(MAPS)
    assert [m.path for m in maps] == ["/usr/bin/prog", "", "/tmp/gone (deleted)", "[vdso]"]
    assert maps[0].offset == 0x1000 and maps[0].end - maps[0].start == 0x1000


def test_jit_map_lines() -> None:
    text = b"7f0000000010 20 js:hot\nbad line\n7f0000000100 0x10 Lfoo;bar baz\n-1 2 neg\n"
    assert parse_lines(text) == (
        [0x7F0000000010, 0x7F0000000100],
        [0x20, 0x10],
        [b"js:hot", b"Lfoo;bar baz"],
    )


@pytest.fixture
def fake_proc(tmp_path: object) -> str:
    import pathlib

    root = pathlib.Path(str(tmp_path))
    (root / "4242").mkdir()
    (root / "4242" / "maps").write_text(MAPS)
    return str(root)


def test_special_mappings_are_named_as_perf_names_them(fake_proc: str) -> None:
    r = Resolver(4242, os.geteuid(), SymbolCache(), fake_proc)
    assert r.refresh()
    assert r.name(0x10) == (UNKNOWN, UNKNOWN)
    assert r.name(0x7F0000000010) == (f"[{ANON}+0x10]", ANON)
    vdso = SymbolCache().vdso()  # the same image as this process's, as perf assumes
    if vdso is not None and vdso.starts:
        assert r.name(0x7FFD00000000 + vdso.starts[0]) == (vdso.symbol(vdso.starts[0]), "[vdso]")
    assert r.name(0x7FFD00001FFF)[1] == "[vdso]"
    assert r.name(0x7F0000002040) == ("[gone (deleted)+0x40]", "gone (deleted)")
    assert r.name(0x55D0C0001010) == ("[prog+0x1010]", "prog")  # not readable here


def test_buffers_fit_two_intervals_within_the_budget() -> None:
    page = 4096
    assert data_pages(1, 1.0) == 64  # 256,000 bytes wanted: 63 pages, the power of two above
    assert data_pages(1, 10.0) == BUFFER_BUDGET // page // 2  # the budget (127) caps it: 64
    assert data_pages(1000, 1.0) == 1
    for threads in (1, 3, 7, 64):
        pages = data_pages(threads, 2.0)
        assert (pages & (pages - 1) == 0 and threads * (pages + 1) * page <= BUFFER_BUDGET) or (
            pages == 1
        )


def test_symbol_lookup_by_address() -> None:
    entries = [(0x100, 0x10, b"a"), (0x100, 0x40, b"a_long"), (0x200, 0, b"z")]
    table = SymbolTable(from_entries(entries), [])
    assert table.symbol(0x120) == "a_long"  # the longest alias at one address stands
    assert table.symbol(0x150) is None
    assert table.symbol(0x200) == "z" and table.symbol(0x201) is None
    assert table.symbol(0x50) is None


def test_this_interpreters_symbols_and_segments() -> None:
    """A real ELF file: ``main`` (or ``Py_BytesMain``) is in .symtab or .dynsym, and the
    first executable segment maps its own file offsets."""
    table = read_table(os.path.realpath(sys.executable))
    assert table.segments and table.starts
    seg = table.segments[0]
    assert table.vaddr(seg.offset) == seg.vaddr
    cache = SymbolCache()
    first = cache.table(os.path.realpath(sys.executable))
    assert first is not None and cache.table(os.path.realpath(sys.executable)) is first


def test_text_lines_and_the_rest_in_one_line() -> None:
    hot = tuple(Hot(f"f{i}", "m", 30 - i) for i in range(25))
    profile = Profile(1, "x", "cpu-clock", 1000, 1.0, sum(h.samples for h in hot), 3, hot, False)
    rows = profile_lines(profile, top=20)
    assert len(rows) == 21 and rows[-1][1] == OTHER and rows[-1][2] == "5 functions"
    assert abs(sum(r[0] for r in rows) - 100.0) < 1e-9
    out = io.StringIO()
    WhereWriter(out, Format.TEXT, 1).frame(profile, 0)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("PID 1 (x): 450 samples of cpu-clock at 1000 Hz, 3 lost (buffer full)")
    assert lines[1] == "    6.7%  f0  m"
