"""The man page, docs/tiptop.1: groff renders it without a warning (``-ww``), and it has an
entry for every option ``--help`` lists and every key the live help window lists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run
from tiptop.live.registry import BINDINGS, label
from tiptop.options.argv import LONG, SHORT

MAN = Path(__file__).resolve().parents[2] / "docs" / "tiptop.1"

pytestmark = pytest.mark.skipif(
    shutil.which("groff") is None, reason="groff is not installed (apt-get install groff)"
)


def groff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["groff", "-man", *args, str(MAN)], capture_output=True, text=True, timeout=60
    )


def entries(section: str) -> list[list[str]]:
    """The tags of a section's ``.TP`` entries as rendered (indented 7 columns, the body at
    14, on the same line when the tag is short), each split at its commas and blanks."""
    r = groff("-Tascii", "-P-cbu", "-rLL=100n")
    assert r.returncode == 0, r.stderr
    text = re.sub(".\x08", "", r.stdout)  # any overstrike left
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(section))
    end = next(i for i in range(start + 1, len(lines)) if lines[i][:1].isalpha())
    tags = [
        re.split(r" {2,}", x.strip())[0] for x in lines[start + 1 : end] if re.match(r"^ {7}\S", x)
    ]
    return [[t for t in re.split(r",? +|, ", tag) if t] for tag in tags]


def test_renders_without_a_warning() -> None:
    r = groff("-ww", "-z")
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_every_option_of_help_has_an_entry() -> None:
    usage = run("--help").stdout
    spelled = {f"-{s}" for s in SHORT} | {f"--{s}" for s in LONG}
    listed = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", usage)) & spelled
    assert listed == spelled, spelled - listed  # --help names every option there is
    tagged = {t for tag in entries("OPTIONS") for t in tag if t.startswith("-")}
    assert spelled - tagged == set()
    assert "--" in tagged  # the command to run


def test_every_key_of_the_live_help_has_an_entry() -> None:
    tagged = {t for tag in entries("KEYS") for t in tag}
    missing = [label([k]) for b in BINDINGS for k in b.keys]
    assert [k for k in missing if k not in tagged] == []


def test_every_time_share_has_an_entry_and_the_bounds_are_the_codes() -> None:
    """Issue 47: the man page explains each part of a task's time (its column and variable)
    and states the time level's bounds as tiptop/screens/timetree.py has them."""
    from tiptop.screens.timetree import IO_BOUND, SLEEP_BOUND, THROTTLED_BOUND, WAIT_BOUND
    from tiptop.screens.variables import TIME_NAMES

    tagged = {t for tag in entries("WHERE THE TIME GOES") for t in tag}
    assert TIME_NAMES - tagged == set(), tagged
    assert {"%RUN", "%WAIT", "%THRT", "%IO", "%SLEEP", "LIMIT"} - tagged == set(), tagged
    text = " ".join(MAN.read_text().split())
    assert f"asleep more than {100 * SLEEP_BOUND:g}% of the interval" in text
    assert f"waited for a CPU more than {100 * WAIT_BOUND:g}% of its busy time" in text
    assert THROTTLED_BOUND == 0.5 and "more than half of that wait" in text
    assert f"blocked on I/O more than {100 * IO_BOUND:g}% of its busy time" in text
