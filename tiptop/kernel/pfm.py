"""Vendor event names (``FP_ASSIST.ANY``) through libpfm4, when ``libpfm.so.4`` loads.

libpfm4's syntax is ``[pmu::]event[:umask][:modifier=val]`` and uses colons, so perf/Intel
``A.B`` becomes ``A:B`` (pfm_get_os_event_encoding(3)). Encoding uses
``PFM_OS_PERF_EVENT_EXT`` and ``PFM_PLM3`` (user level); the privilege bits libpfm sets are
dropped, since the sampler decides ``exclude_*`` itself.
"""

from __future__ import annotations

from tiptop.errors import EventError
from tiptop.kernel import _ffi
from tiptop.kernel.attr import Attr
from tiptop.kernel.consts import PFM_ERR_NOTFOUND, PFM_OS_PERF_EVENT_EXT, PFM_PLM3


def to_pfm_syntax(name: str) -> str:
    """``FP_ASSIST.ANY`` -> ``FP_ASSIST:ANY`` (a ``pmu::`` prefix is kept)."""
    pmu, sep, rest = name.rpartition("::")
    return pmu + sep + rest.replace(".", ":")


def available() -> bool:
    """Whether libpfm4 can be loaded and initialised."""
    try:
        _ffi.pfm_lib()
    except EventError:
        return False
    return True


def encode(name: str) -> Attr:
    """The ``Attr`` libpfm4 gives for ``name``; ``EventError`` when it cannot."""
    lib = _ffi.pfm_lib()
    ffi = _ffi.ffi
    pfm_name = to_pfm_syntax(name)
    attr = ffi.new("struct perf_event_attr *")
    attr.size = _ffi.ATTR_SIZE
    arg = ffi.new("pfm_perf_encode_arg_t *")
    arg.attr = attr
    arg.size = ffi.sizeof("pfm_perf_encode_arg_t")
    rc = lib.pfm_get_os_event_encoding(
        pfm_name.encode(), PFM_PLM3, PFM_OS_PERF_EVENT_EXT, ffi.cast("void *", arg)
    )
    if rc != 0:
        msg = ffi.string(lib.pfm_strerror(rc)).decode(errors="replace")
        if rc == PFM_ERR_NOTFOUND:
            raise EventError(
                f"unknown event {name!r} (libpfm4: {msg} for this CPU); give it as "
                "cpu/event=0x..,umask=0x../ or rNNNN"
            )
        raise EventError(f"event {name!r}: libpfm4 says {msg} (as {pfm_name!r})")
    return Attr(
        type=int(attr.type),
        config=int(attr.config),
        config1=int(attr.config1),
        config2=int(attr.config2),
        config3=int(attr.config3),
    )
