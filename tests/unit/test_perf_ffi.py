"""The cffi binding: struct layout (include/uapi/linux/perf_event.h), golden bitfield
bytes, real errnos."""

from __future__ import annotations

import errno
import os
import struct

import pytest

from tiptop.errors import TiptopError
from tiptop.kernel import _ffi, perf_event_open
from tiptop.kernel.attr import Attr
from tiptop.kernel.consts import PERF_FLAG_FD_CLOEXEC, Ioctl

OFFSETS = {
    "type": 0,
    "size": 4,
    "config": 8,
    "sample_period": 16,
    "sample_type": 24,
    "read_format": 32,
    "wakeup_events": 48,
    "bp_type": 52,
    "config1": 56,
    "config2": 64,
    "branch_sample_type": 72,
    "sample_regs_user": 80,
    "sample_stack_user": 88,
    "clockid": 92,
    "sample_regs_intr": 96,
    "aux_watermark": 104,
    "sample_max_stack": 108,
    "aux_sample_size": 112,
    "sig_data": 120,
    "config3": 128,
}


def test_struct_size_is_ver8() -> None:
    assert _ffi.ffi.sizeof("struct perf_event_attr") == 136 == _ffi.ATTR_SIZE


@pytest.mark.parametrize(("field", "offset"), OFFSETS.items())
def test_offsets(field: str, offset: int) -> None:
    assert _ffi.ffi.offsetof("struct perf_event_attr", field) == offset


def _flags(**kw: bool) -> int:
    raw = _ffi.attr_bytes(Attr(type=1, config=0, exclude_kernel=False, exclude_hv=False, **kw))
    return struct.unpack_from("<Q", raw, 40)[0]


def test_bitfield_golden_bytes() -> None:
    raw = _ffi.attr_bytes(
        Attr(
            type=1,
            config=2,
            disabled=True,
            exclude_kernel=True,
            inherit_thread=True,
            exclude_hv=False,
        )
    )
    # disabled = bit 0, exclude_kernel = bit 5, inherit_thread = bit 35 (struct
    # perf_event_attr's bitfields, include/uapi/linux/perf_event.h).
    assert raw[40:48] == bytes.fromhex("2100000008000000")
    assert struct.unpack_from("<IIQ", raw, 0) == (1, 136, 2)
    assert struct.unpack_from("<Q", raw, 32)[0] == 15  # group read format


@pytest.mark.parametrize(
    ("flag", "bit"),
    [
        ("disabled", 0),
        ("inherit", 1),
        ("pinned", 2),
        ("exclude_user", 4),
        ("exclude_idle", 7),
        ("enable_on_exec", 12),
        ("inherit_thread", 35),
    ],
)
def test_each_flag_bit(flag: str, bit: int) -> None:
    assert _flags(**{flag: True}) == 1 << bit


def test_exclude_defaults_bits() -> None:
    raw = _ffi.attr_bytes(Attr(type=0, config=0))
    assert struct.unpack_from("<Q", raw, 40)[0] == (1 << 5) | (1 << 6)


def test_config_words_land_where_the_kernel_reads_them() -> None:
    raw = _ffi.attr_bytes(Attr(type=9, config=1, config1=2, config2=3, config3=4))
    assert struct.unpack_from("<Q", raw, 8)[0] == 1
    assert struct.unpack_from("<QQ", raw, 56) == (2, 3)
    assert struct.unpack_from("<Q", raw, 128)[0] == 4


def test_laid_out_once_then_copied() -> None:
    """The second struct of one Attr is a copy of the first (``Layouts``); an equal Attr
    gets the same bytes and a different one its own; ``size`` is per call."""
    a = Attr(type=4, config=0x1_0000_01A0, inherit=True, exclude_user=True)
    first = bytes(_ffi.ffi.buffer(_ffi.new_attr(a)))
    again = _ffi.new_attr(a, size=64)
    assert bytes(_ffi.ffi.buffer(again))[8:] == first[8:]
    assert again.size == 64 and again.type == 4 and again.inherit == 1
    twin = Attr(type=4, config=0x1_0000_01A0, inherit=True, exclude_user=True)
    assert _ffi.attr_bytes(twin) == first
    other = _ffi.attr_bytes(Attr(type=4, config=0x76, inherit=True))
    assert struct.unpack_from("<Q", other, 8)[0] == 0x76
    assert _ffi.attr_bytes(a) == first


def test_a_kept_layout_is_never_another_attr_s() -> None:
    """The layouts are kept by the whole Attr: attrs that differ in any one field the
    struct holds, each laid out after the others, get the bytes a fresh layout gives."""
    base = Attr(type=1, config=3)
    variants = [
        base,
        *(
            base.replace(**{f: 1 - bool(getattr(base, f))})
            for f in (
                "disabled",
                "inherit",
                "inherit_thread",
                "pinned",
                "exclude_user",
                "exclude_kernel",
                "exclude_hv",
                "exclude_idle",
                "enable_on_exec",
            )
        ),
    ]
    variants += [base.replace(**{f: 7}) for f in ("config1", "config2", "config3", "read_format")]
    kept = [_ffi.attr_bytes(v) for v in variants]
    for v, got in zip(variants, kept, strict=True):
        c = _ffi.ffi.new("struct perf_event_attr *")
        _ffi.Layouts().fill(c, v)
        c.size = _ffi.ATTR_SIZE
        assert got == bytes(_ffi.ffi.buffer(c)), v
    assert len(set(kept)) == len(variants)


def test_syscall_numbers() -> None:
    assert _ffi.syscall_number("x86_64") == 298
    assert _ffi.syscall_number("aarch64") == 241
    with pytest.raises(TiptopError, match="unsupported architecture 'sparc64'"):
        _ffi.syscall_number("sparc64")


def test_ioctl_numbers() -> None:
    assert (Ioctl.ENABLE, Ioctl.DISABLE, Ioctl.RESET, Ioctl.ID) == (
        0x2400,
        0x2401,
        0x2403,
        0x80082407,
    )


def test_real_open_software_event_on_self() -> None:
    fd = perf_event_open(Attr(type=1, config=1, read_format=0), 0, -1, -1, PERF_FLAG_FD_CLOEXEC)
    try:
        busy = sum(range(200_000))
        assert busy > 0
        (value,) = struct.unpack("<Q", os.read(fd, 8))
        assert value > 0  # task-clock ns
    finally:
        os.close(fd)


def test_real_errno_esrch_for_missing_task() -> None:
    pid = 4_000_000  # above pid_max's ceiling (4194304 is the max; this one is unused)
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    with pytest.raises(OSError) as e:
        perf_event_open(Attr(type=1, config=1), pid, -1, -1, PERF_FLAG_FD_CLOEXEC)
    assert e.value.errno == errno.ESRCH


def test_real_errno_einval_bad_software_config() -> None:
    with pytest.raises(OSError) as e:
        perf_event_open(Attr(type=1, config=1000), 0, -1, -1, PERF_FLAG_FD_CLOEXEC)
    assert e.value.errno in (errno.ENOENT, errno.EINVAL)
