"""``tiptop -b --why PID`` as a user runs it: without a PMU, where the task's time goes and
one line on what the hardware would add (exit status 0); one line and exit status 1 where
no tree can be shown (no tree on the chosen screen, no such process), exit 2 for a value
that is not a PID; with a hardware PMU, the tree of a running process."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.helpers import GENERIC_EPYC, ZEN4, hardware_pmu_error, run, run_as_cpu


@pytest.mark.skipif(hardware_pmu_error() is None, reason="this machine has a hardware PMU")
@pytest.mark.parametrize(
    ("cpuinfo", "fragment"),
    [
        # A CPU with a top-down tree (Zen 4): the tree's screen cannot count without a PMU.
        (ZEN4, "no hardware PMU here"),
        # QEMU's generic EPYC model (17h/01h): no top-down screen at all (issue 39).
        (GENERIC_EPYC, "tiptop has no top-down screen for x86 17_01"),
    ],
)
def test_without_a_pmu_where_the_time_goes_and_status_0(cpuinfo: str, fragment: str) -> None:
    """Whatever the CPU model, the time level of the ``state`` screen, exit status 0, and
    one line saying what the hardware would add and why it cannot here (issue 47); the
    CPU is picked through the injected Host's cpuinfo, never this machine's."""
    pid = os.getpid()
    r = run_as_cpu(cpuinfo, "-b", "--why", str(pid), "-n", "1", "-d", "0.2")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"tiptop --why {pid}: screen 'state' "), lines
    assert "a hardware PMU would split that time" in lines[1] and fragment in lines[1], lines
    assert f"--where {pid}" in lines[1], lines
    assert re.match(rf"\d\d:\d\d:\d\d PID {pid} \(.*\): ", lines[2]), lines
    labels = [ln.split()[0].lstrip("*") or ln.split()[1] for ln in lines[4:9]]
    assert labels == ["Run", "Wait", "Throttled", "IO", "Sleep"], lines
    assert "PMU" not in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--why", "999999999"], 1, "--why 999999999: no such process"),
        (["--why", "abc"], 2, "--why: 'abc' is not a process id"),
        (["--why", "1", "-S", "default"], 1, "screen 'default' has no bottleneck tree"),
        (["--why", "1", "--", "true"], 2, "--why takes the PID of a running process"),
        (["--why", "1", "--format", "csv"], 2, "--why prints a tree: --format text or json"),
    ],
)
def test_refusals_are_one_line(args: list[str], code: int, fragment: str) -> None:
    r = run("-b", "-n", "1", *args)
    assert r.returncode == code and fragment in r.stderr, r
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.skipif(hardware_pmu_error() is not None, reason="no hardware PMU on this machine")
def test_with_a_pmu_the_tree_of_a_busy_process() -> None:
    """Where the CPU has a top-down screen: one JSON object per refresh, every node with a
    share or null; elsewhere the one line of the test above."""
    r = run("-b", "--why", str(os.getpid()), "-n", "2", "-d", "0.2", "--format", "json")
    if r.returncode == 1 and "no top-down screen" in r.stderr:
        pytest.skip(f"this CPU has no top-down tree: {r.stderr.strip()}")
    assert r.returncode == 0, r
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(recs) == 2 and all(rec["pid"] == os.getpid() for rec in recs)
    assert all(n["threshold"] > 0 for rec in recs if rec["nodes"] for n in rec["nodes"])


def test_the_drill_downs_extra_source_counts_one_process() -> None:
    """The live ``t`` window's extra source (cli.run.drill_source) is ``-p PID``'s sampler:
    here over the software-event ``sched`` screen, its frames hold that process alone
    while other processes run."""
    import time

    from tiptop.cli.run import drill_source
    from tiptop.host import Host
    from tiptop.options import Options
    from tiptop.screens import Target, builtin_screens

    sched = next(s for s in builtin_screens(Target()) if s.name == "sched")
    src = drill_source(Options(show_idle=True), Host.read(), os.getpid(), sched)
    try:
        src.start()
        end = time.monotonic() + 0.3
        while time.monotonic() < end:  # run a little: a row with a non-zero count
            pass
        frame = src.refresh()
        assert set(frame.pid.tolist()) == {os.getpid()}, frame.pid
    finally:
        src.close()
