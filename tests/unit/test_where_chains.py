"""``--where``'s call chains on made-up input: sample records with a chain (and a chain that
claims more than its record holds), switch records, chains named frame by frame (return
addresses by their call, the kernel's part by its symbols), and names demangled by LLVM's
demanglers within bounds."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from tiptop.kernel.attr import SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME
from tiptop.kernel.ring import (
    CONTEXT_KERNEL,
    CONTEXT_USER,
    MISC_SWITCH_OUT,
    RECORD_SAMPLE,
    RECORD_SWITCH,
    Switch,
    parse,
)
from tiptop.where.demangle import MAX_REFERENCES, demangled
from tiptop.where.elf import SymbolCache, SymbolTable
from tiptop.where.functions import from_entries
from tiptop.where.kallsyms import KERNEL, read_kallsyms
from tiptop.where.resolve import Resolver

CHAINED = SAMPLE_IP | SAMPLE_TID | SAMPLE_CALLCHAIN
TIMED = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN


def chained(ip: int, tid: int, chain: list[int], when: int | None = None, nr: int = -1) -> bytes:
    """A sample record with a call chain (``nr`` claimed, default its length) and, when
    ``when`` is given, a time."""
    body = struct.pack("<QII", ip, tid, tid)
    if when is not None:
        body += struct.pack("<Q", when)
    body += struct.pack("<Q", len(chain) if nr < 0 else nr) + struct.pack(f"<{len(chain)}Q", *chain)
    return struct.pack("<IHH", RECORD_SAMPLE, 0, 8 + len(body)) + body


def switch(tid: int, when: int, out: bool) -> bytes:
    return struct.pack("<IHHIIQ", RECORD_SWITCH, MISC_SWITCH_OUT if out else 0, 24, tid, tid, when)


def test_samples_with_chains_and_switches() -> None:
    data = chained(0x10, 5, [CONTEXT_USER, 0x10, 0x20, 0x30], when=1000)
    data += switch(5, 1100, True) + switch(5, 1500, False)
    data += chained(0x40, 6, [CONTEXT_KERNEL, 0xFFFF0010, CONTEXT_USER, 0x40], when=2000)
    drained = parse(data, TIMED)
    assert drained.ips == [0x10, 0x40] and drained.times == [1000, 2000]
    assert drained.chains == [
        (CONTEXT_USER, 0x10, 0x20, 0x30),
        (CONTEXT_KERNEL, 0xFFFF0010, CONTEXT_USER, 0x40),
    ]
    assert [(s.tid, s.time, s.out) for s in drained.switches] == [(5, 1100, True), (5, 1500, False)]
    assert all(isinstance(s, Switch) for s in drained.switches) and drained.lost == 0


def test_a_chain_longer_than_its_record_is_a_lost_sample() -> None:
    data = chained(0x10, 5, [CONTEXT_USER, 0x10], nr=500) + chained(0x20, 5, [CONTEXT_USER, 0x20])
    drained = parse(data, CHAINED)
    assert drained.ips == [0x20] and drained.chains == [(CONTEXT_USER, 0x20)]
    assert drained.lost == 1


MAPS = "55d0c0001000-55d0c0003000 r-xp 00001000 08:01 123 /usr/bin/prog\n"


def test_chains_are_named_frame_by_frame(tmp_path: Path) -> None:
    """The first address is where the sample was taken; each other one is a return
    address, named by its call (the byte before): 0x55d0c0002000 returns into ``b``, which
    ends there, not into ``c``, which begins there."""
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text(MAPS)
    resolver = Resolver(7, os.geteuid(), SymbolCache(), str(tmp_path))
    assert resolver.refresh()
    table = from_entries([(0x1000, 0x800, b"a"), (0x1800, 0x800, b"b"), (0x2000, 0x800, b"c")])
    from tiptop.where.elf import Segment

    resolver._tables[0x55D0C0001000] = SymbolTable(table, [Segment(0x1000, 0x2000, 0x1000)])
    frames, user = resolver.frames((CONTEXT_USER, 0x55D0C0001010, 0x55D0C0002000, 0x10))
    assert frames == (("a", "prog"), ("b", "prog"), ("[unknown]", "[unknown]"))
    assert user == 3
    # The same address first (where the sample was taken): the function that begins there.
    assert resolver.frames((CONTEXT_USER, 0x55D0C0002000))[0] == (("c", "prog"),)


def test_a_kernel_part_is_named_from_kallsyms(tmp_path: Path) -> None:
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text(
        "ffffffff81000000 T _stext\nffffffff81000100 t schedule\n"
        "ffffffff81000200 D some_data\nffffffff81000300 T do_nanosleep [mod]\n"
    )
    table = read_kallsyms(str(kallsyms))
    assert table is not None
    assert table.symbol(0xFFFFFFFF81000150) == "schedule"
    assert table.symbol(0xFFFFFFFF81000250) == "schedule"  # data is not code: schedule's
    assert table.symbol(0xFFFFFFFF81000300) == "do_nanosleep"
    hidden = tmp_path / "hidden"
    hidden.write_text("0000000000000000 T _stext\n0000000000000000 t schedule\n")
    assert read_kallsyms(str(hidden)) is None  # kptr_restrict: every address 0
    r = Resolver(1, 0, SymbolCache(), str(tmp_path))
    r._kernel = table
    frames, user = r.frames((CONTEXT_KERNEL, 0xFFFFFFFF81000110, 0xFFFFFFFF81000301))
    assert frames == (("schedule", KERNEL), ("do_nanosleep", KERNEL)) and user == 0


@pytest.mark.parametrize(
    ("mangled", "plain"),
    [
        ("_ZN2ns5Klass6methodEi", "ns::Klass::method(int)"),
        ("_ZNKSt5ctypeIcE8do_widenEc", "std::ctype<char>::do_widen(char) const"),
        ("_ZN2ns5Klass6methodEi.cold", "ns::Klass::method(int) (.cold)"),
        ("_RNvCs1234_7mycrate3foo", "mycrate::foo"),  # Rust v0
        (  # Rust legacy: the hash dropped, the escapes written back
            "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h5ad2a0c4a0f7a1b3E",
            "std::rt::lang_start::{{closure}}",
        ),
        (
            "_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h0123456789abcdefE",
            "core::ptr::drop_in_place<alloc::string::String>",
        ),
        ("main", "main"),
        ("_Zx", "_Zx"),  # not a valid name: kept
        ("_Z\x1b[2J", "_Z\x1b[2J"),  # kept; made printable by the table that holds it
    ],
)
def test_names_demangled(mangled: str, plain: str) -> None:
    assert demangled(mangled) == plain


def base36(n: int) -> str:
    """A substitution's sequence id (Itanium C++ ABI, 5.1.10): digits and capitals."""
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    text = digits[n % 36]
    while n >= 36:
        n //= 36
        text = digits[n % 36] + text
    return text


def bomb(levels: int) -> str:
    """A mangled name whose each level is a pointer to a function taking the level below
    twice, by back-reference: its demangled length doubles per level (22 levels: 234
    bytes that demangle to 200 MB)."""
    name, last = "PFviiE", 0
    for _ in range(levels):
        ref = f"S{base36(last - 1)}_" if last > 0 else "S_"
        name += f"PFv{ref}{ref}E"
        last += 2
    return "_Z1f" + name


def test_a_name_that_would_demangle_to_megabytes_is_kept() -> None:
    """Back-references beyond the bound: kept as it is, at once, whatever it would
    demangle to; within it, demangled (and cut past 4 KiB)."""
    started = time.monotonic()
    assert demangled(bomb(40)) == bomb(40)
    assert time.monotonic() - started < 0.1
    small = demangled(bomb(MAX_REFERENCES // 2 - 1))
    assert small.startswith("f(void (*)(") and len(small) <= 4096 + 3


def test_a_table_demangles_a_name_when_it_is_first_shown() -> None:
    table = from_entries([(0x100, 0x10, b"_ZN2ns5Klass6methodEi"), (0x200, 0x10, b"plain")])
    assert table.symbol(0x105) == "ns::Klass::method(int)"
    assert table.symbol(0x205) == "plain"


def test_waits_last_until_the_thread_runs_again(tmp_path: Path) -> None:
    """A switch sample (the chain of the thread leaving the CPU) opens a wait; the
    thread's switch-in record closes it: its length goes to the stack, the kernel's part
    cut to the function it waits in; a wait still open is counted up to now and the rest
    at the next refresh."""
    from tiptop.kernel.ring import Drained
    from tiptop.where.offcpu import Waits

    resolver = Resolver(7, os.geteuid(), SymbolCache(), str(tmp_path))
    resolver._kernel = from_entries(
        [
            (0x1000, 0x100, b"__schedule"),
            (0x1100, 0x100, b"schedule"),
            (0x1200, 0x100, b"do_nanosleep"),
        ]
    )
    sleep = (CONTEXT_KERNEL, 0x1010, 0x1110, 0x1210, CONTEXT_USER, 0x10)
    waits = Waits(resolver)
    one = Drained(
        [0, 0],
        [5, 5],
        0,
        [100, 400],
        [sleep, sleep],
        [
            Switch(5, 101, True),
            Switch(5, 300, False),
            Switch(5, 401, True),
        ],
    )
    waited = waits.take(one)
    user = ("[unknown]", "[unknown]")
    assert waited == {(user, ("do_nanosleep", KERNEL)): 200}
    assert waits.switches == 2
    before = time.monotonic_ns()
    waits.now(waited, set())
    assert waited[(user, ("do_nanosleep", KERNEL))] > 200 + (before - 400) - 10**9
    again = waits.take(Drained([], [], 0, [], [], [Switch(5, time.monotonic_ns(), False)]))
    assert sum(again.values()) < 10**8  # only the part since the last count
