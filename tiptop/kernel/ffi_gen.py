"""Writes ``tiptop/kernel/_perf_cffi.py``, the cffi declarations of ``tiptop.kernel._ffi``
compiled for the out-of-line ABI mode (:func:`tiptop.kernel._ffi.generate`). After editing
``CDEF`` there, run::

    python3 -m tiptop.kernel.ffi_gen

``tests/test_startup.py`` fails while the generated module is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tiptop.kernel._ffi import generate

#: The generated module.
TARGET = Path(__file__).resolve().with_name("_perf_cffi.py")


def main() -> int:
    """Write the generated module; 0 when done."""
    TARGET.write_text(generate())
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
