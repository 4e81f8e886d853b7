"""``tiptop -b --where PID --folded FILE`` on tests/data/callers.c (main -> a -> work 75% of
its CPU time, main -> b -> work 25%): the file's counts add up to the samples taken and
to the stacks of the json output; it loads in speedscope (npm's package, in jsdom: the
profile it exports is the file's); and ``perf record -g`` on the same process at the same
time agrees with it within 5 points per stack (``perf report --no-children -g folded``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, TIPTOP, run
from tests.system.hostile import Target
from tests.system.test_where import launch, start
from tests.system.test_where_calls import build, built, share_ending

assert start and built  # fixtures, used by name

LOADER = Path(REPO) / "tests" / "support" / "speedscope_load.cjs"


@pytest.fixture
def folded() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="tiptop-folded-"))
    try:
        yield where / "callers.folded"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def read_folded(path: Path) -> dict[str, int]:
    """``stack -> count`` of a folded file, every line checked for its shape."""
    stacks: dict[str, int] = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"(\S.*) (\d+)", line)
        assert m, line
        stacks[m.group(1)] = stacks.get(m.group(1), 0) + int(m.group(2))
    return stacks


def test_folded_counts_add_up_to_the_samples_taken(
    built: Path, start: list[Target], folded: Path
) -> None:
    target = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    r = run(
        "-b",
        "--where",
        str(target.pid),
        "-n",
        "3",
        "-d",
        "1",
        "--format",
        "json",
        "--folded",
        str(folded),
    )
    assert r.returncode == 0, r
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    taken = sum(rec["samples"] for rec in recs)
    stacks = read_folded(folded)
    assert taken > 300 and sum(stacks.values()) == taken, (taken, stacks)
    from_json: dict[str, int] = {}
    for rec in recs:
        for s in rec["stacks"]:
            key = ";".join(f[0] for f in s["frames"])
            from_json[key] = from_json.get(key, 0) + s["samples"]
    assert stacks == from_json
    assert 68 <= share_ending(stacks, taken, "main;a;work") <= 82, stacks


def speedscope() -> str:
    """Where node finds speedscope and jsdom (``npm install -g speedscope jsdom``)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True).stdout.strip()
    for package in ("speedscope", "jsdom"):
        if not (Path(root) / package / "package.json").exists():
            pytest.skip(f"{package} is not installed (npm install -g speedscope jsdom)")
    return root


def spans(exported: dict[str, object]) -> dict[str, int]:
    """Each frame path's total weight in a speedscope evented profile (its open and close
    events replayed)."""
    shared = exported["shared"]
    assert isinstance(shared, dict)
    names = [f["name"] for f in shared["frames"]]
    profiles = exported["profiles"]
    assert isinstance(profiles, list) and len(profiles) == 1
    totals: dict[str, int] = {}
    opened: list[tuple[str, int]] = []
    for event in profiles[0]["events"]:
        if event["type"] == "O":
            opened.append((names[event["frame"]], event["at"]))
        else:
            path = ";".join(name for name, _at in opened)
            name, at = opened.pop()
            assert name == names[event["frame"]]
            totals[path] = totals.get(path, 0) + event["at"] - at
    return totals


def test_the_folded_file_loads_in_speedscope(
    built: Path, start: list[Target], folded: Path
) -> None:
    """speedscope reads the file as a profile (its title names it), and what it exports
    has the file's total and each path's samples: ``...;main;a;work`` with its callees."""
    root = speedscope()
    target = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    r = run("-b", "--where", str(target.pid), "-n", "2", "-d", "1", "--folded", str(folded))
    assert r.returncode == 0, r
    stacks = read_folded(folded)
    env = {**os.environ, "NODE_PATH": root}
    loaded = subprocess.run(
        ["node", str(LOADER), str(folded)], capture_output=True, text=True, env=env, timeout=120
    )
    assert loaded.returncode == 0, loaded
    out = json.loads(loaded.stdout)
    assert out["title"] == f"{folded.name} - speedscope", out
    exported = out["exported"]
    assert exported is not None, out
    profile = exported["profiles"][0]
    assert profile["endValue"] - profile["startValue"] == sum(stacks.values()), profile
    totals = spans(exported)
    for path, weight in totals.items():
        if path.endswith("main;a;work"):
            assert weight == sum(n for k, n in stacks.items() if k.startswith(path)), totals


def perf_folded(data: Path) -> dict[str, int]:
    """``perf report --no-children -g folded``'s stacks (outermost first) with counts."""
    argv = ["perf", "report", "-i", str(data), "--no-children", "--stdio"]
    r = subprocess.run([*argv, "-g", "folded,0,caller,count"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stacks: dict[str, int] = {}
    for line in r.stdout.splitlines():
        m = re.fullmatch(r"(\d+) (\S+)", line.strip())
        if m:
            stacks[m.group(2)] = stacks.get(m.group(2), 0) + int(m.group(1))
    return stacks


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed (linux-perf)")
def test_perf_record_agrees_within_5_points_per_stack(
    built: Path, start: list[Target], folded: Path
) -> None:
    """perf (``-e cpu-clock:u``: user mode, as tiptop samples) and tiptop on the same
    process over the same 3 seconds: the share of each of the program's stacks."""
    target = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    data = folded.with_suffix(".data")
    record = ["perf", "record", "-q", "-e", "cpu-clock:u", "-g", "-F", "1000"]
    perf = subprocess.Popen(
        [*record, "-p", str(target.pid), "-o", str(data), "--", "sleep", "3.5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.2)
    env = {**os.environ, "PYTHONPATH": REPO}
    argv = [*TIPTOP, "-b", "--where", str(target.pid), "-n", "3", "-d", "1"]
    r = subprocess.run([*argv, "--folded", str(folded)], capture_output=True, text=True, env=env)
    _out, err = perf.communicate(timeout=60)
    assert r.returncode == 0 and perf.returncode == 0, (r, err)
    ours, theirs = read_folded(folded), perf_folded(data)
    assert sum(theirs.values()) > 300, theirs
    for tail in ("main;a;work", "main;b;work"):
        mine = share_ending(ours, sum(ours.values()), tail)
        perfs = share_ending(theirs, sum(theirs.values()), tail)
        assert abs(mine - perfs) <= 5, (tail, mine, perfs, ours, theirs)
