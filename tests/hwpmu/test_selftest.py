"""``tiptop --selftest`` where a PMU answers: the instructions slope is the kernel's prediction.

The self-test's ``loop`` kernel (tiptop/selftest/code.py) retires exactly 2 instructions per
iteration; counted by pid through tiptop's own engine (plan, group reads, scaling) over four
sizes, the exact least-squares slope must be exactly 2 in the emulated-PMU guest (QEMU
``-icount``: exact user-mode counts) and within 0.5% on a real PMU. A broken scaling
(``engine/readout._scale``) or a wrong count makes it fail: docs/selftest.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.hwpmu.conftest import IN_GUEST, tiptop_env

pytestmark = pytest.mark.hwpmu

NOBODY = 65534


def _selftest(*args: str, user: int | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    """``python3 -m tiptop --selftest -S default --format json ARGS``, its JSON report."""
    python = "python3" if IN_GUEST else sys.executable
    r = subprocess.run(
        [python, "-m", "tiptop", "--selftest", "-S", "default", "--format", "json", *args],
        capture_output=True,
        text=True,
        env=tiptop_env(),
        timeout=900,
        cwd="/",
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )
    assert r.stdout, r.stderr
    return r, json.loads(r.stdout)


def _row(doc: dict, event: str) -> dict:
    return next(e for e in doc["events"] if e["event"] == event)


def test_selftest_instructions_slope_is_prediction(report: Callable[[str], None]) -> None:
    """INSTRUCTIONS: slope 2 exactly (guest) or within 0.5%; the whole self-test exits 0."""
    r, doc = _selftest()
    for e in doc["events"]:
        report(
            f"selftest {e['event']:<18} kernel={e['kernel'] or '-':<10} predicted={e['predicted']} "
            f"slope={e['slope']} intercept={e['intercept']} r2={e['r2']} {e['verdict']}"
        )
    report(doc["summary"])
    ins = _row(doc, "INSTRUCTIONS")
    assert ins["kernel"] == "loop" and ins["predicted"] == 2.0, ins
    if IN_GUEST:
        assert ins["kind"] == "exact" and ins["slope"] == 2.0 and ins["r2"] == 1.0, ins
        # the fixed frame of the kernel lands in the intercept, the same for every size
        assert [c - 2 * n for c, n in zip(ins["counts"], ins["sizes"], strict=True)] == [
            ins["intercept"]
        ] * 4, ins
    else:
        assert ins["kind"] in ("exact", "within"), ins
    assert r.returncode == doc["exit"] == 0, (doc["summary"], r.stderr)


def test_selftest_unprivileged_user_mode(root_only: None) -> None:
    """As uid 65534 (user-mode counting of its own child only): instructions still exact."""
    if not IN_GUEST:
        pytest.skip("the guest runs plain python3 as uid 65534; tests/system covers hosts")
    r, doc = _selftest(user=NOBODY)
    ins = _row(doc, "INSTRUCTIONS")
    assert ins["kind"] == "exact" and ins["slope"] == 2.0, (ins, r.stderr)
    assert _row(doc, "page-faults")["kind"] == "exact", doc
    assert r.returncode == 0, doc["summary"]
