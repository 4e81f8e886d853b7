"""kernel.keep_heap: numpy arrays of thousands of rows made and freed without page faults."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: 100 rounds of three (5000, 5) float64 arrays (200 KB each, as a refresh at 5000 tasks
#: makes), counted in page faults after a warm-up; prints the count, or "no" when the
#: library did not take the settings.
_WORKLOAD = """
import resource, sys
import numpy as np
from tiptop.cli.run import HEAP_KEPT
from tiptop.kernel import keep_heap
if sys.argv[1] == "keep" and not keep_heap(HEAP_KEPT):
    print("no"); raise SystemExit
x = np.ones((5000, 5))
for _ in range(5):
    a = x * 2.0; b = a + x; c = np.where(b > 1, a, b); del a, b, c
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    a = x * 2.0; b = a + x; c = np.where(b > 1, a, b); del a, b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _faults(mode: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", _WORKLOAD, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return run.stdout.strip()


def test_arrays_of_5000_rows_reuse_the_heap() -> None:
    kept = _faults("keep")
    if kept == "no":
        pytest.skip("this C library has no mallopt(3) (not glibc)")
    # 300 arrays of 49 pages: mapped afresh each, ~14,700 faults (11,401 on the development
    # VM without keep_heap); from the heap, a few dozen at most.
    assert int(kept) < 300, f"{kept} page faults for 300 arrays made and freed"
