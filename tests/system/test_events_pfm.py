"""A vendor event name through libpfm4 for a CPU forced with ``LIBPFM_FORCE_PMU``, in a
subprocess with that variable in its environment (this process's libpfm is left alone)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tiptop.kernel import pfm

_PFM_SNIPPET = """
from tiptop.events import resolve
(b,) = resolve("FP_ASSIST.ANY", sysfs_root="/nonexistent")
print(b.attr.type, hex(b.attr.config))
"""


def test_libpfm_vendor_name_forced_skylake() -> None:
    """skl::FP_ASSIST:ANY -> type 4, config 0x1001eca: event 0xca, umask 0x1e, cmask 1
    (Intel's Skylake event list) at bits 0-7, 8-15 and 24-31 (the cpu PMU's sysfs format/)."""
    if not pfm.available():
        pytest.skip("libpfm.so.4 is not installed")
    env = {**os.environ, "LIBPFM_FORCE_PMU": "skl"}
    out = subprocess.run(
        [sys.executable, "-c", _PFM_SNIPPET], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "0x1001eca"]
