"""The self-test's kernels as machine code: a few dozen bytes each, x86-64 and aarch64.

No compiler runs: each kernel is spelled here as instruction bytes, so that what it does per
iteration is known exactly (a Python loop's count would depend on the interpreter). Every
kernel is one function ``f(n, rfd, wfd, buf)`` (the platform C calling convention: System V
AMD64 ``rdi, rsi, rdx, rcx``; AAPCS64 ``x0..x3``) with the same frame around its body:

1. ``write(wfd, "r")`` - ready; then ``read(rfd)`` blocks until the monitor has attached;
2. the body: ``n`` iterations of the kernel proper;
3. ``write(wfd, "d")`` - done; then ``read(rfd)`` blocks until the monitor has read;
4. return.

Between the return from the first ``read`` and the entry of the second ``write`` the only user
instructions are the body's plus a fixed handful, so counts over several ``n`` are a line whose
slope is the body's per-iteration count and whose intercept is that handful (Linux syscall ABI:
x86-64 ``syscall`` with the number in ``rax`` clobbers ``rcx`` and ``r11`` only; aarch64
``svc #0`` with the number in ``x8`` clobbers ``x0`` only; syscall numbers from
arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h).

Kernels (``KERNELS``): ``loop`` (2 instructions and 1 conditional branch per iteration),
``mispredict`` (a xorshift64 generator's low bit decides a branch: half of them mispredicted),
``predict`` (the same code, but the branch tests a bit that is always 0: 2 conditional branches
per iteration, both always taken, none mispredicted after warm-up), ``divide`` (a chain of
integer divides, each waiting for the previous quotient: the back end is the bottleneck),
``add`` (4 independent register adds, 2 NOPs and the loop branch: the pipeline retires near its
width), ``touch`` (one store per 4 KiB page of ``buf``: one page fault per fresh page), ``pingpong``
(one ``write`` then one blocking ``read`` per iteration: one context switch each),
``chase_small``/``chase_large`` (one load per iteration, each from the address the previous
load gave, over a random ring of cache lines in ``buf``: below and above the L1 size).
``INSTRUCTIONS`` gives each kernel's exact instructions per iteration (tests/hwpmu checks it
in the emulated-PMU guest, where user-mode instruction counts are exact).
"""

from __future__ import annotations

from tiptop.readonly import readonly

#: Kernel names, in the order the self-test runs them.
KERNELS = (
    "loop",
    "mispredict",
    "touch",
    "pingpong",
    "chase_small",
    "chase_large",
    "predict",
    "divide",
    "add",
)
#: The code each kernel runs (the two chases differ only by their ring's size).
CODE_OF = {"chase_small": "chase", "chase_large": "chase"}
#: Bytes of the ring each chase walks: well below any L1 data cache (16 KiB and up), and far
#: above L1 and L2, so that every load misses L1.
CHASE_BYTES = {"chase_small": 4096, "chase_large": 16 << 20}
#: One pointer per cache line.
LINE = 64
PAGE = 4096
#: xorshift64 seed of the mispredict kernel (any nonzero value).
SEED = 0x9E3779B97F4A7C15
#: Exact instructions per iteration of each kernel's body, per architecture (the loop branch
#: included; ``mispredict`` is left out: its skipped instruction depends on the random bit).
INSTRUCTIONS: dict[str, dict[str, int]] = {
    # loop: dec, jnz; predict: 3 x (mov, shift, xor), test, jz, dec, jnz (inc skipped);
    # divide: div, dec, jnz; add: 4 adds, 2 nops, dec, jnz; chase: mov, dec, jnz;
    # touch: mov, add, dec, jnz
    "x86_64": {
        "loop": 2,
        "predict": 13,
        "divide": 3,
        "add": 8,
        "chase_small": 3,
        "chase_large": 3,
        "touch": 4,
    },
    # loop: subs, b.ne; predict: 3 eor, tbz, subs, b.ne (add skipped); divide: udiv, subs,
    # b.ne; add: 4 adds, 2 nops, subs, b.ne; chase: ldr, subs, b.ne; touch: strb, add, subs, b.ne
    "aarch64": {
        "loop": 2,
        "predict": 6,
        "divide": 3,
        "add": 8,
        "chase_small": 3,
        "chase_large": 3,
        "touch": 4,
    },
}


@readonly
class Label:
    """A jump target inside a kernel."""

    name: str


@readonly
class Jump:
    """A jump to ``label``: x86 ``opcode rel8``; aarch64 ``B.cond``/``TBZ`` with the offset
    field filled in (``word`` is the instruction with a zero offset)."""

    op: int
    label: str


# --------------------------------------------------------------------------- x86-64
_X86_WRITE = bytes.fromhex("b801000000 4c89d7 4889e6 ba01000000 0f05")  # write(r10, rsp, 1)
_X86_READ = bytes.fromhex("31c0 4c89cf 4889e6 ba01000000 0f05")  # read(r9, rsp, 1)
_X86_DEC_R8 = bytes.fromhex("49ffc8")
_X86_JNZ, _X86_JZ = 0x75, 0x74
_X86_PROLOGUE = bytes.fromhex(
    "53"  # push rbx
    "50"  # push rax: the 8-byte buffer the syscalls use, at [rsp]
    "4989f8"  # mov r8, rdi   (n)
    "4989f1"  # mov r9, rsi   (rfd)
    "4989d2"  # mov r10, rdx  (wfd)
    "4889cb"  # mov rbx, rcx  (buf)
)
_X86_EPILOGUE = bytes.fromhex("58 5b c3")  # pop rax; pop rbx; ret
_X86_XORSHIFT = bytes.fromhex(
    "4889c1 48c1e10d 4831c8"  # rax ^= rax << 13
    "4889c1 48c1e907 4831c8"  # rax ^= rax >> 7
    "4889c1 48c1e111 4831c8"  # rax ^= rax << 17
)


def _x86_branchy(mask: int) -> list[bytes | Label | Jump]:
    """xorshift64 in ``rax``, then ``test al, mask; jz S; inc rcx; S:`` and the loop branch:
    with mask 1 the branch follows a random bit; with mask 0 it is always taken."""
    return [
        b"\x48\xb8" + SEED.to_bytes(8, "little"),  # movabs rax, SEED
        Label("L"),
        _X86_XORSHIFT,
        bytes([0xA8, mask]),  # test al, mask
        Jump(_X86_JZ, "S"),
        bytes.fromhex("48ffc1"),  # inc rcx
        Label("S"),
        _X86_DEC_R8,
        Jump(_X86_JNZ, "L"),
    ]


_X86_BODIES: dict[str, list[bytes | Label | Jump]] = {
    "loop": [Label("L"), _X86_DEC_R8, Jump(_X86_JNZ, "L")],
    "mispredict": _x86_branchy(1),
    "predict": _x86_branchy(0),
    "divide": [
        bytes.fromhex("b901000000 31d2 b8ffffffff"),  # mov ecx, 1; xor edx, edx; mov eax, -1
        Label("L"),
        bytes.fromhex("f7f1"),  # div ecx: edx:eax / 1, quotient 0xffffffff back into eax
        _X86_DEC_R8,
        Jump(_X86_JNZ, "L"),
    ],
    "add": [
        Label("L"),
        bytes.fromhex("4883c001 4883c101 4883c201 4883c601"),  # add rax/rcx/rdx/rsi, 1
        bytes.fromhex("90 90"),  # nop; nop
        _X86_DEC_R8,
        Jump(_X86_JNZ, "L"),
    ],
    "touch": [
        Label("L"),
        bytes.fromhex("c60301"),  # mov byte [rbx], 1
        bytes.fromhex("4881c300100000"),  # add rbx, 4096
        _X86_DEC_R8,
        Jump(_X86_JNZ, "L"),
    ],
    "pingpong": [Label("L"), _X86_WRITE, _X86_READ, _X86_DEC_R8, Jump(_X86_JNZ, "L")],
    "chase": [
        Label("L"),
        bytes.fromhex("488b1b"),
        _X86_DEC_R8,
        Jump(_X86_JNZ, "L"),
    ],  # mov rbx, [rbx]
}


def _x86(items: list[bytes | Label | Jump]) -> bytes:
    """Assemble bytes, labels and 2-byte ``jcc rel8`` jumps."""
    where: dict[str, int] = {}
    pos = 0
    for it in items:
        if isinstance(it, Label):
            where[it.name] = pos
        else:
            pos += 2 if isinstance(it, Jump) else len(it)
    out = bytearray()
    for it in items:
        if isinstance(it, Jump):
            rel = where[it.label] - (len(out) + 2)
            if not -128 <= rel < 128:
                raise ValueError(f"jump to {it.label} out of rel8 range")
            out += bytes([it.op, rel & 0xFF])
        elif isinstance(it, bytes):
            out += it
    return bytes(out)


# --------------------------------------------------------------------------- aarch64
def _a64_movz(rd: int, imm16: int, hw: int = 0) -> int:
    """MOVZ Xd, #imm16, LSL #(16*hw)."""
    return 0xD2800000 | (hw << 21) | (imm16 << 5) | rd


def _a64_mov(rd: int, rm: int) -> int:
    """MOV Xd, Xm (ORR Xd, XZR, Xm)."""
    return 0xAA0003E0 | (rm << 16) | rd


def _a64_syscall(nr: int, fd_reg: int) -> list[int]:
    """``nr(fd_reg, sp, 1)``: x0 = fd, x1 = sp, x2 = 1, x8 = nr, svc #0."""
    return [_a64_mov(0, fd_reg), 0x910003E1, _a64_movz(2, 1), _a64_movz(8, nr), 0xD4000001]


_A64_READ, _A64_WRITE = 63, 64
_A64_SUBS_X9 = 0xF1000529  # subs x9, x9, #1
_A64_BNE = 0x54000001  # b.ne <offset in imm19>
_A64_TBZ_X13_0 = 0x3600000D  # tbz x13, #0, <offset in imm14>
_A64_TBZ_XZR_0 = 0x3600001F  # tbz xzr, #0, <offset in imm14>: always taken
_A64_PROLOGUE = [
    0xD10043FF,  # sub sp, sp, #16: the buffer the syscalls use, at [sp]
    _a64_mov(9, 0),  # n
    _a64_mov(10, 1),  # rfd
    _a64_mov(11, 2),  # wfd
    _a64_mov(12, 3),  # buf
]
_A64_EPILOGUE = [0x910043FF, 0xD65F03C0]  # add sp, sp, #16; ret


def _a64_eor_shift(rd: int, shift_type: int, amount: int) -> int:
    """EOR Xd, Xd, Xd, LSL/LSR #amount (shift_type 0 = LSL, 1 = LSR)."""
    return 0xCA000000 | (shift_type << 22) | (rd << 16) | (amount << 10) | (rd << 5) | rd


def _a64_branchy(tbz: int) -> list[int | Label | Jump]:
    """xorshift64 in ``x13``, then ``tbz Xt, #0, S; add x14, x14, #1; S:`` and the loop
    branch: testing x13 the branch follows a random bit; testing XZR it is always taken."""
    return [
        *[
            _a64_movz(13, (SEED >> (16 * k)) & 0xFFFF, k) | (0x20000000 if k else 0)
            for k in range(4)
        ],
        Label("L"),
        _a64_eor_shift(13, 0, 13),
        _a64_eor_shift(13, 1, 7),
        _a64_eor_shift(13, 0, 17),
        Jump(tbz, "S"),
        0x910005CE,  # add x14, x14, #1
        Label("S"),
        _A64_SUBS_X9,
        Jump(_A64_BNE, "L"),
    ]


_A64_BODIES: dict[str, list[int | Label | Jump]] = {
    "loop": [Label("L"), _A64_SUBS_X9, Jump(_A64_BNE, "L")],
    "mispredict": _a64_branchy(_A64_TBZ_X13_0),
    "predict": _a64_branchy(_A64_TBZ_XZR_0),
    "divide": [
        _a64_movz(13, 0xFFFF, 3),  # x13 = 0xffff << 48: a 64-bit quotient
        _a64_movz(14, 1),  # x14 = 1
        Label("L"),
        0x9ACE09AD,  # udiv x13, x13, x14
        _A64_SUBS_X9,
        Jump(_A64_BNE, "L"),
    ],
    "add": [
        Label("L"),
        0x910005AD,  # add x13, x13, #1
        0x910005CE,  # add x14, x14, #1
        0x910005EF,  # add x15, x15, #1
        0x91000484,  # add x4, x4, #1
        0xD503201F,  # nop
        0xD503201F,  # nop
        _A64_SUBS_X9,
        Jump(_A64_BNE, "L"),
    ],
    "touch": [
        0x5280002D,  # movz w13, #1
        Label("L"),
        0x3900018D,  # strb w13, [x12]
        0x9140058C,  # add x12, x12, #1, lsl #12 (4096)
        _A64_SUBS_X9,
        Jump(_A64_BNE, "L"),
    ],
    "pingpong": [
        Label("L"),
        *_a64_syscall(_A64_WRITE, 11),
        *_a64_syscall(_A64_READ, 10),
        _A64_SUBS_X9,
        Jump(_A64_BNE, "L"),
    ],
    "chase": [Label("L"), 0xF940018C, _A64_SUBS_X9, Jump(_A64_BNE, "L")],  # ldr x12, [x12]
}


def _a64(items: list[int | Label | Jump]) -> bytes:
    """Assemble 32-bit words, labels and ``B.cond``/``TBZ`` jumps (word offsets)."""
    where: dict[str, int] = {}
    pos = 0
    for it in items:
        if isinstance(it, Label):
            where[it.name] = pos
        else:
            pos += 1
    words: list[int] = []
    for it in items:
        if isinstance(it, Jump):
            rel = where[it.label] - len(words)
            if it.op & 0x7E000000 == 0x36000000:  # TBZ/TBNZ: imm14 at bit 5
                words.append(it.op | ((rel & 0x3FFF) << 5))
            else:  # B.cond: imm19 at bit 5
                words.append(it.op | ((rel & 0x7FFFF) << 5))
        elif isinstance(it, int):
            words.append(it)
    return b"".join(w.to_bytes(4, "little") for w in words)


def kernel_code(arch: str, name: str) -> bytes:
    """The machine code of kernel ``name`` for ``arch`` (see the module doc).

    Raises ``KeyError`` for an architecture or kernel without code."""
    name = CODE_OF.get(name, name)
    if arch == "x86_64":
        body = _x86(_X86_BODIES[name])
        return (
            _X86_PROLOGUE + _X86_WRITE + _X86_READ + body + _X86_WRITE + _X86_READ + _X86_EPILOGUE
        )
    if arch == "aarch64":
        write, read = _a64_syscall(_A64_WRITE, 11), _a64_syscall(_A64_READ, 10)
        items = [*_A64_PROLOGUE, *write, *read, *_A64_BODIES[name], *write, *read, *_A64_EPILOGUE]
        return _a64(items)
    raise KeyError(arch)
