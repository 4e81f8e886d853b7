"""One sentence for one cause: where the machine has no hardware PMU, ``--check``,
``--list-screens`` and ``--selftest`` say ``tiptop.kernel.explain.NO_PMU``, word for word
(what, why, what to do); a run (batch stderr, the live message line) says it in one short
line, once (``no_pmu_line``: at most 100 characters, issue 39), whatever the screen."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, hardware_pmu_error, run
from tests.system.test_live_tmux import Tmux
from tiptop.events.sysfs import alias_pmus
from tiptop.kernel.explain import NO_PMU, NO_PMU_COLUMNS, no_pmu_line


@pytest.fixture
def no_pmu() -> None:
    err = hardware_pmu_error()
    if err != "ENOENT" or alias_pmus("/sys"):
        pytest.skip(f"a machine without a hardware PMU at all (cycles gives {err})")


def test_check_list_and_selftest_say_the_same_line(no_pmu: None) -> None:
    said = {
        "--check": run("--check").stdout,
        "--list-screens": run("--list-screens").stdout,
        "--selftest": run("--selftest", "-S", "default", timeout=120).stdout,
    }
    assert [where for where, text in said.items() if NO_PMU not in text] == [], said
    # The errno-only wording of before is gone from all of them.
    assert not [w for w, t in said.items() if "ENOENT (No such file" in t], said


@pytest.mark.parametrize(
    ("args", "doing"),
    [
        ([], "showing screen 'state'"),  # the fallback to where the time goes (no PMU)
        (["-S", "default"], NO_PMU_COLUMNS),  # five hardware events, one line
    ],
)
def test_batch_says_one_short_line_once(no_pmu: None, args: list[str], doing: str) -> None:
    r = run("-b", "-n", "3", "-d", "0.1", *args)
    assert r.returncode == 0, r
    about_pmu = [line for line in r.stderr.splitlines() if "PMU" in line]
    assert about_pmu == [f"tiptop: {no_pmu_line(doing)}"], r.stderr
    assert max(len(line) for line in r.stderr.splitlines()) <= 100, r.stderr


def test_live_message_line_says_the_short_line(no_pmu: None, tmp_path: Path) -> None:
    """At 80x24 the line takes one row, its first words and the key that shows it whole,
    and the table header is right below (issue 50: two rows); the ``e`` window has the
    whole explanation, once."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux([*TIPTOP, "-d", "5"], tmp_path, cols=80, rows=24)
    try:
        line = no_pmu_line("showing screen 'state'")
        lines = t.wait(lambda ls: "PID" in ls[3], "the table header on the 4th row")
        first, more = lines[2].rstrip().split("\u2026")
        assert line.startswith(first) and len(first) > 40 and more == " (m: more)", lines[:4]
        t.keys("e")
        lines = t.wait(lambda ls: "END" in "".join(ls), "the e window")
        window = " ".join(x.strip("│ ") for x in lines)
        assert window.count("(a VM or") == 1, lines
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()
