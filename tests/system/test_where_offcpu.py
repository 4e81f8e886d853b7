"""Off-CPU time in ``tiptop -b --where PID`` (root: ``sched:sched_switch`` samples with call
chains): tests/data/offcpu.c waits 70% of its time in nanosleep() called from sleeper_a()
and 30% in read() on a pipe called from reader_b(); the waiting tree must say so (70/30
+/- 10), each wait under the kernel function it waits in. Without root, one line says why
and the run goes on with its on-CPU samples."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import nobody_command, run
from tests.system.hostile import Target
from tests.system.test_where import NOBODY, launch, start
from tests.system.test_where_calls import build, built

assert start and built  # fixtures, used by name


def waited(pid: int, *args: str) -> tuple[dict[str, float], float, list[dict[str, object]]]:
    """Per waiting stack (``;``-joined), its nanoseconds over the run; the seconds waited;
    the json records."""
    r = run("-b", "--where", str(pid), "--format", "json", *args)
    assert r.returncode == 0, r
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    stacks: dict[str, float] = {}
    seconds = 0.0
    for rec in recs:
        waiting = rec["waiting"]
        assert waiting is not None, rec
        seconds += waiting["seconds"]
        for s in waiting["stacks"]:
            key = ";".join(f[0] for f in s["frames"])
            stacks[key] = stacks.get(key, 0) + s["ns"]
    return stacks, seconds, recs


@pytest.mark.skipif(os.geteuid() != 0, reason="off-CPU time is root's (sched:sched_switch)")
def test_the_waiting_tree_splits_as_the_program_waits(built: Path, start: list[Target]) -> None:
    target = launch(start, [str(build(built, "offcpu.c", "-fno-omit-frame-pointer"))])
    stacks, seconds, recs = waited(target.pid, "-n", "3", "-d", "1")
    total = sum(stacks.values())
    assert seconds > 2.0 and total > 0, recs  # three refreshes of a process that waits
    sleeper = sum(n for k, n in stacks.items() if "sleeper_a;clock_nanosleep;do_nanosleep" in k)
    reader = sum(n for k, n in stacks.items() if "reader_b;" in k and k.endswith("pipe_read"))
    assert 60 <= 100 * sleeper / total <= 80, stacks
    assert 20 <= 100 * reader / total <= 40, stacks
    last = recs[-1]["waiting"]
    assert isinstance(last, dict)
    tree = last["tree"]
    assert tree and tree[0]["symbol"] == "do_nanosleep", tree  # bottom-up: where it waits


@pytest.mark.skipif(os.geteuid() != 0, reason="off-CPU time is root's (sched:sched_switch)")
def test_the_text_tree_has_a_waiting_root(built: Path, start: list[Target]) -> None:
    program = build(built, "offcpu.c", "-fno-omit-frame-pointer")
    target = launch(start, [str(program)])
    r = run("-b", "--where", str(target.pid), "-n", "1", "-d", "1", "--top-down")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    root = next(i for i, ln in enumerate(lines) if "  waiting  " in ln)
    assert lines[root].startswith("  100.0%  waiting  ") and "s off CPU, " in lines[root], lines
    assert any(ln.strip().endswith(f"sleeper_a  {program.name}") for ln in lines[root:]), lines


def test_without_root_one_line_says_why(built: Path, start: list[Target]) -> None:
    target = launch(start, [*NOBODY, str(build(built, "offcpu.c", "-fno-omit-frame-pointer"))])
    argv = ["-m", "tiptop", "-b", "--where", str(target.pid), "-n", "2", "-d", "0.5"]
    cmd, env = nobody_command([*argv, "--format", "json"])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd="/")
    assert r.returncode == 0, r
    said = [ln for ln in r.stderr.splitlines() if "off-CPU" in ln]
    assert said == [
        f"tiptop: --where {target.pid}: off-CPU time not sampled: sched:sched_switch with "
        "call chains needs root or CAP_PERFMON (and tracefs, root-only)"
    ], r.stderr
    assert all(json.loads(line)["waiting"] is None for line in r.stdout.splitlines())


def pointed(out: str) -> list[tuple[float, bool]]:
    """Per refresh of ``--why``'s text: its ``Run`` share, and whether the line pointing to
    the waiting tree ends it."""
    found = []
    for block in out.split("\n\n"):
        run_line = re.search(r"^ [ *] Run +([\d.]+)%", block, re.MULTILINE)  # *: critical
        if run_line:
            found.append((float(run_line.group(1)), "mostly off CPU: tiptop -b --where" in block))
    return found


def test_why_points_a_waiting_task_to_where_it_waits(built: Path, start: list[Target]) -> None:
    """``--why`` ends a task's tree with the line pointing to the waiting tree exactly when
    it ran under half the interval: always for the waiting program; for the busy one
    (callers.c) only where the machine's load kept it off CPU that long."""
    waiting = launch(start, [str(build(built, "offcpu.c", "-fno-omit-frame-pointer"))])
    busy = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    r = run("-b", "--why", str(waiting.pid), "-n", "2", "-d", "0.5")
    assert r.returncode == 0, r
    assert f"mostly off CPU: tiptop -b --where {waiting.pid} says where it waits" in r.stdout
    assert [said for _run, said in pointed(r.stdout)] == [True, True], r.stdout
    r = run("-b", "--why", str(busy.pid), "-n", "2", "-d", "0.5")
    assert r.returncode == 0, r
    found = pointed(r.stdout)
    # The share printed is rounded: one at 50.0% may be either side of it.
    judged = [(share, said) for share, said in found if abs(share - 50) > 0.1]
    assert len(found) == 2 and all(said == (share < 50) for share, said in judged), r.stdout
