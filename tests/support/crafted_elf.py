"""Crafted ELF files, as the attacker's pass made them (/work/shared/attacks/craft_elf.py,
craft_elf_shnum.py), for the ``--where`` bounds (issue 52). Every file holds ``jmp $``
(EB FE) at file offset 0x1000, covered by a ``PT_LOAD``, so a process that maps the file
executable and jumps there spins inside it (:data:`SPIN`, run by the system tests).

Kinds: ``ok`` (``n`` functions, ``hot_loop`` covering 0x1000), ``esc`` (the same, its names
holding terminal escapes: title, screen wipe, OSC 52 clipboard, C1 CSI), ``nonul`` (``n``
functions whose names all start at one run of ``length`` bytes without a NUL), ``sparse``
(a ``.symtab`` claiming ``n`` entries of zeros, the file made sparse), ``bigname`` (one
function whose name is ``length`` bytes long); :func:`with_sections` claims ``n`` sections
in a sparse section header table."""

from __future__ import annotations

import struct
from pathlib import Path

CODE = 0x1000
#: What a hot name of ``esc`` holds.
ESCAPES = b"hot\x1b]0;PWNED-title\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\xc2\x9b31mred"

_SHSTR = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"

#: A program (for the interpreter running the tests, as uid 65534) that maps FILE
#: executable, jumps to its ``jmp $`` in a thread, prints its PID and waits; with a second
#: argument, renames the file every that many seconds (the same file under a new name).
SPIN = """
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
at = libc.mmap(None, 0x2000, 5, 2, fd, 0)  # PROT_READ|PROT_EXEC, MAP_PRIVATE
os.close(fd)
spin = ctypes.CFUNCTYPE(None)(at + 0x1000)
threading.Thread(target=spin, daemon=True).start()
print(os.getpid(), flush=True)
every = float(sys.argv[2]) if len(sys.argv) > 2 else 0
i = 0
while True:
    time.sleep(every or 3600)
    if every:
        os.rename(path, f"{path}.{i}")
        path, i = f"{path}.{i}", i + 1
"""


def _sym(name: int, value: int, size: int, info: int = 0x12, shndx: int = 1) -> bytes:
    return struct.pack("<IBBHQQ", name, info, 0, shndx, value, size)


def _shdr(name: int, kind: int, offset: int, size: int, link: int = 0, entsize: int = 0) -> bytes:
    return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, link, 1, 8, entsize)


def _shname(name: str) -> int:
    return _SHSTR.index(name.encode() + b"\0")


def craft(kind: str, out: Path, n: int = 1000, length: int = 1 << 20) -> int:
    """Write the ``kind`` of file at ``out``; its size (the sparse size for ``sparse``)."""
    syms = [_sym(0, 0, 0, 0, 0)]
    claim = None
    if kind in ("ok", "esc"):
        strtab = bytearray(b"\0")
        for i, name in enumerate(
            [b"hot_loop" if kind == "ok" else ESCAPES] + [b"f%07d" % i for i in range(n - 1)]
        ):
            syms.append(_sym(len(strtab), CODE if i == 0 else CODE + 0x10 * i, 2 if i == 0 else 16))
            strtab += name + b"\0"
    elif kind == "nonul":
        syms += [_sym(1, CODE + i * 16, 16) for i in range(n)]
        strtab = bytearray(b"\0" + b"A" * length)
    elif kind == "bigname":
        syms.append(_sym(1, CODE, 2))
        strtab = bytearray(b"\0" + b"B" * length + b"\0")
    elif kind == "sparse":
        strtab = bytearray(b"\0")
        claim = n * 24
    else:
        raise ValueError(kind)
    symtab = b"".join(syms)
    body = bytearray(0x2000)
    body[CODE : CODE + 2] = b"\xeb\xfe"
    off_shstr = len(body)
    body += _SHSTR
    body += bytes(-len(body) % 8)
    off_sym = len(body)
    if claim is None:
        body += symtab
    off_str = len(body)
    body += strtab
    body += bytes(-len(body) % 8)
    off_sh = len(body)
    if claim is not None:
        off_sym = off_sh + 5 * 64  # zeros past the headers, in the sparse tail
    body += b"".join(
        [
            _shdr(0, 0, 0, 0),
            _shdr(_shname(".text"), 1, CODE, 0x1000),
            _shdr(_shname(".symtab"), 2, off_sym, claim or len(symtab), link=3, entsize=24),
            _shdr(_shname(".strtab"), 3, off_str, len(strtab)),
            _shdr(_shname(".shstrtab"), 3, off_shstr, len(_SHSTR)),
        ]
    )
    total = len(body)
    body[0:64] = struct.pack(
        "<4sBBBBB7sHHIQQQIHHHHHH",
        b"\x7fELF",
        2,
        1,
        1,
        0,
        0,
        bytes(7),
        3,
        62,
        1,
        CODE,
        64,
        off_sh,
        0,
        64,
        56,
        1,
        64,
        5,
        4,
    )
    body[64:120] = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
    with open(out, "wb") as f:
        f.write(body)
        if claim is not None:
            total = off_sym + claim
            f.truncate(total)
    return total


def with_sections(source: Path, out: Path, n: int) -> int:
    """``source`` with its section count extended to ``n`` (``e_shnum`` 0, the count in
    section 0's ``sh_size``) and a sparse section header table of zeros; its size."""
    b = bytearray(source.read_bytes())
    shoff = (len(b) + 4095) & ~4095
    struct.pack_into("<Q", b, 0x28, shoff)
    struct.pack_into("<HH", b, 0x3C, 0, 0xFFFF)
    b += bytes(shoff - len(b))
    b += struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, n, 0, 0, 0, 0)
    with open(out, "wb") as f:
        f.write(b)
        f.truncate(shoff + 64 * n)
    return shoff + 64 * n
