"""``tiptop -b --why PID`` where a PMU counts (issue 47): the time level (where the task's
time went, from the kernel's accounting) always, and beneath "running" the top-down tree
where tiptop has one for this CPU, else one line saying what lacks. In the emulated-PMU
guest (cortex-a72, 41_D08) tiptop has no top-down tree: the line names that CPU."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.hwpmu.conftest import IN_GUEST, ROOT, LoopMaker

pytestmark = pytest.mark.hwpmu

TIME_LABELS = ["Run", "Wait", "Throttled", "IO", "Sleep"]


def test_why_shows_where_the_time_went_and_what_lies_beneath(
    loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    child = loop_children(4, 10**13)  # runs for as long as the test needs it
    child.go()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "tiptop", "-b", "--why", str(child.pid), "-n", "2", "-d", "1"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    finally:
        child.kill()
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    heads = [ln for ln in lines if re.match(rf"\d\d:\d\d:\d\d PID {child.pid} ", ln)]
    assert len(heads) == 2, r.stdout
    report(f"--why on a loop: {heads[-1].split(': ', 1)[1]}")
    # The loop runs, or waits for the CPU tiptop also runs on: never asleep, never unknown.
    assert re.search(r": (running|waiting for a CPU) \d+% of its time", heads[-1]), heads
    nodes = [ln.replace("*", " ").split()[0] for ln in lines if re.match(r" [ *] {1,5}\w", ln)]
    assert [n for n in nodes if n in TIME_LABELS][:5] == TIME_LABELS, lines
    screen = lines[0]
    if "screen 'state'" in screen:  # no top-down tree for this CPU, or its events do not count
        assert "a hardware PMU would split that time" in lines[1], lines[:3]
        if IN_GUEST:
            assert "no top-down screen for arm64 41_D08" in lines[1], lines[1]
    else:  # a top-down tree beneath Run
        assert any(n in ("FE", "BAD", "BE", "RET") for n in nodes), lines
