"""One sentence for one cause: where the machine has no hardware PMU, start-up, ``--check``,
``--list-screens``, the live view's message line and ``--selftest`` all say
``tiptop.kernel.explain.NO_PMU``, word for word (what, why, what to do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, hardware_pmu_error, run
from tests.system.test_live_tmux import Tmux
from tiptop.events.sysfs import alias_pmus
from tiptop.kernel.explain import NO_PMU


@pytest.fixture
def no_pmu() -> None:
    err = hardware_pmu_error()
    if err != "ENOENT" or alias_pmus("/sys"):
        pytest.skip(f"a machine without a hardware PMU at all (cycles gives {err})")


def test_batch_check_list_and_selftest_say_the_same_line(no_pmu: None) -> None:
    said = {
        "start-up": run("-b", "-n", "1", "-d", "0.1").stderr,
        "--check": run("--check").stdout,
        "--list-screens": run("--list-screens").stdout,
        "--selftest": run("--selftest", "-S", "default", timeout=120).stdout,
    }
    assert [where for where, text in said.items() if NO_PMU not in text] == [], said
    # The errno-only wording of before is gone from all of them.
    assert not [w for w, t in said.items() if "ENOENT (No such file" in t], said


def test_live_message_line_says_the_same_line(no_pmu: None, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux([*TIPTOP, "-d", "5"], tmp_path, cols=200, rows=50)
    try:
        # The message line (row 3, wrapped at spaces onto the next rows) of the start.
        lines = t.wait(lambda ls: "starting on screen" in " ".join(ls[:6]), "the notice")
        joined = " ".join(x.strip() for x in lines[2:6])
        assert NO_PMU in joined, lines[:6]
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()
