"""ELF files a watched task crafted, read by ``--where`` within bounds (issue 52, item 2):
a ``.symtab`` claiming 10,000,000 entries in 12 KB of sparse file (pyelftools: > 300 s,
deaf to signals), a million sections (16.7 s), names without a NUL (pyelftools read to the
end of the file once per symbol: 1.39 GB for a 1.1 MB file, then MemoryError), a 1 MiB
name, escape sequences in names; and a bounded fuzzer of mutations
(/work/shared/attacks/tools/fuzz_elf.py). Each is read or refused in well under a
second, with one line saying which bound, and the same tables as before for real files."""

from __future__ import annotations

import io
import os
import random
import struct
import sys
import time
from pathlib import Path

import pytest

from tests.support.crafted_elf import ESCAPES, craft, with_sections
from tiptop.outside import decoded
from tiptop.where import elf
from tiptop.where.elf import ELF_ERRORS, SymbolCache, SymbolTable, read_elf, read_table
from tiptop.where.functions import MAX_NAME
from tiptop.where.untrusted import Refused


def timed(path: Path) -> tuple[SymbolTable | Refused, float]:
    """What reading ``path`` gave (a table, or the Refused), and how long it took."""
    began = time.monotonic()
    try:
        got: SymbolTable | Refused = read_table(str(path))
    except Refused as refused:
        got = refused
    return got, time.monotonic() - began


def table_of(path: Path) -> SymbolTable:
    """The table read from ``path``, which the test knows is not refused."""
    got, _spent = timed(path)
    assert isinstance(got, SymbolTable), got
    return got


def test_a_sparse_table_of_ten_million_symbols_is_refused_at_once(tmp_path: Path) -> None:
    size = craft("sparse", tmp_path / "sparse.so", 10_000_000)
    assert size > 200 << 20 and os.stat(tmp_path / "sparse.so").st_blocks * 512 < 1 << 20
    got, spent = timed(tmp_path / "sparse.so")
    assert isinstance(got, Refused) and got.rule == "symbols", got
    assert got.why == "claims 10,000,000 symbols (at most 4,000,000 read)"
    assert spent < 0.2


def test_a_sparse_table_under_the_cap_is_read_within_the_budget(tmp_path: Path) -> None:
    craft("sparse", tmp_path / "sparse.so", 2_000_000)
    got, spent = timed(tmp_path / "sparse.so")
    if isinstance(got, Refused):  # a loaded machine: out of time, said so
        assert got.rule == "time", got
    else:
        assert len(got.functions) == 0
    assert spent < elf.READ_SECONDS + 0.5


def test_a_million_sections_are_refused_at_once(tmp_path: Path) -> None:
    craft("ok", tmp_path / "ok.so", 10)
    with_sections(tmp_path / "ok.so", tmp_path / "shnum.so", 1_000_000)
    got, spent = timed(tmp_path / "shnum.so")
    assert isinstance(got, Refused) and got.why == "claims 1,000,000 sections (at most 4,096 read)"
    assert spent < 0.2


@pytest.mark.parametrize("kind", ["nonul", "bigname"])
def test_names_without_an_end_are_cut(tmp_path: Path, kind: str) -> None:
    craft(kind, tmp_path / "x.so", 1300, 1 << 20)
    got, spent = timed(tmp_path / "x.so")
    assert spent < 0.5 and isinstance(got, SymbolTable), got
    name = got.symbol(0x1000)
    assert name == ("A" if kind == "nonul" else "B") * MAX_NAME + "..."


def test_escapes_in_names_are_printable(tmp_path: Path) -> None:
    craft("esc", tmp_path / "esc.so", 10)
    name = table_of(tmp_path / "esc.so").symbol(0x1000)
    assert name is not None and name == decoded(ESCAPES)
    assert "\x1b" not in name and "\x9b" not in name


def test_real_files_read_as_before() -> None:
    """This interpreter and the C library: every function pyelftools' own iteration finds
    (defined STT_FUNC/STT_GNU_IFUNC at an address) is found, by the same name."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    for path in (os.path.realpath(sys.executable), *_libc()):
        table = read_table(path)
        with open(path, "rb") as f:
            reference = ELFFile(f)
            section = reference.get_section_by_name(".symtab") or reference.get_section_by_name(
                ".dynsym"
            )
            assert isinstance(section, SymbolTableSection), path
            wanted = {
                int(s["st_value"])
                for s in section.iter_symbols()
                if s["st_info"]["type"] in ("STT_FUNC", "STT_LOOS")
                and s["st_shndx"] != "SHN_UNDEF"
                and s["st_value"]
            }
        assert set(table.starts) == wanted, path


def _libc() -> list[str]:
    with open("/proc/self/maps") as f:
        return sorted({ln.split()[-1] for ln in f if "libc.so" in ln or "libc-" in ln})[:1]


#: Offsets and formats of ELF64 header fields: e_shoff, e_shentsize, e_shnum, e_phoff,
#: e_phnum.
HEADER_FIELDS = [(0x28, "<Q"), (0x3A, "<H"), (0x3C, "<H"), (0x20, "<Q"), (0x38, "<H")]
INTERESTING = [0, 1, 0x7F, 0xFF, 0xFFFF, 0xFF00, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, (1 << 64) - 1]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """fuzz_elf.py's mutations: header fields, section header fields, bit flips, cuts."""
    b = bytearray(data)
    for _ in range(rng.choice([1, 2, 3])):
        op = rng.randrange(5)
        if op == 0:
            for _ in range(rng.choice([1, 8])):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            off, fmt = rng.choice(
                [(0x28, "<Q"), (0x3A, "<H"), (0x3C, "<H"), (0x20, "<Q"), (0x38, "<H")]
            )
            struct.pack_into(
                fmt, b, off, rng.choice(INTERESTING) & ((1 << (8 * struct.calcsize(fmt))) - 1)
            )
        elif op == 2:
            shoff = struct.unpack_from("<Q", b, 0x28)[0]
            at = shoff + rng.randrange(5) * 64 + rng.choice([0x18, 0x20, 0x28, 0x38])
            if at + 8 <= len(b):
                struct.pack_into("<Q", b, at, rng.choice([*INTERESTING, rng.randrange(len(b))]))
        elif op == 3:
            del b[rng.randrange(64, len(b)) :]
        else:
            i = rng.randrange(len(b))
            b[i : i + 16] = os.urandom(16)
    return bytes(b)


CASES = int(os.environ.get("TIPTOP_FUZZ_CASES", "400"))


def test_mutated_files_are_read_or_refused_never_raise(tmp_path: Path) -> None:
    """400 mutations of a crafted file and a real one: read, refused, or not ELF; never
    another exception, never more than the budget."""
    rng = random.Random(52)
    craft("ok", tmp_path / "ok.so", 50)
    corpus = [
        (tmp_path / "ok.so").read_bytes(),
        Path(os.path.realpath(sys.executable)).read_bytes()[: 1 << 20],
    ]
    slowest = 0.0
    for _ in range(CASES):
        data = mutate(rng.choice(corpus), rng)
        began = time.monotonic()
        try:
            read_elf(io.BytesIO(data), len(data))
        except (Refused, *ELF_ERRORS):
            pass
        slowest = max(slowest, time.monotonic() - began)
    assert slowest < elf.READ_SECONDS + 0.5, slowest


def test_a_refresh_reads_files_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past REFRESH_SECONDS a refresh reads no more files: they wait for the next one
    (not remembered as unreadable)."""
    craft("ok", tmp_path / "ok.so", 10)
    cache = SymbolCache()
    monkeypatch.setattr(cache, "_until", time.monotonic() - 1)
    assert cache.table(str(tmp_path / "ok.so")) is None
    cache.new_refresh()
    table = cache.table(str(tmp_path / "ok.so"))
    assert table is not None and table.symbol(0x1000) == "hot_loop"


def test_the_cache_is_keyed_by_identity_not_name(tmp_path: Path) -> None:
    """where_rename_growth.sh: a target renaming its mapped file every second grew root's
    tiptop by one table per name (1.45 MB/s). The same file under a new name is the same
    table, read once."""
    craft("ok", tmp_path / "lib.so", 5000)
    cache = SymbolCache()
    first = cache.table(str(tmp_path / "lib.so"))
    for i in range(20):
        os.rename(tmp_path / ("lib.so" if i == 0 else f"lib.so.{i - 1}"), tmp_path / f"lib.so.{i}")
        cache.new_refresh()
        assert cache.table(str(tmp_path / f"lib.so.{i}")) is first
    assert len(cache) == 1


def test_the_cache_is_bounded_in_count_and_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ever new files (a process that maps one after another): the least recently used
    go past CACHE_TABLES tables, or past CACHE_BYTES."""
    cache = SymbolCache()
    for i in range(elf.CACHE_TABLES + 10):
        craft("ok", tmp_path / f"{i}.so", 20)
        assert cache.table(str(tmp_path / f"{i}.so")) is not None
    assert len(cache) == elf.CACHE_TABLES
    craft("ok", tmp_path / "big.so", 20_000)
    one = cache.table(str(tmp_path / "big.so"))
    assert one is not None
    monkeypatch.setattr(elf, "CACHE_BYTES", 3 * one.nbytes)
    for i in range(6):
        craft("ok", tmp_path / f"big{i}.so", 20_000)
        cache.table(str(tmp_path / f"big{i}.so"))
        assert cache.nbytes <= 3 * one.nbytes
    assert len(cache) == 3
