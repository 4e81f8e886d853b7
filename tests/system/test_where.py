"""``tiptop -b --where PID`` on a real process, no PMU needed (``cpu-clock`` samples): a C
program built here spends 80% of its CPU time in ``hot_loop`` and 20% in ``cold_loop``
(tests/data/hotcold.c, by its thread CPU clock), and the shares must come out so, as root
and as uid 65534 on its own process; a stripped copy gives ``[module+offset]`` names whose
shares add up the same; a JIT map file is honoured; a process that exits ends the run
with one line; another user's process is one line naming the errno and what would allow
it."""

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
from typing import Any

import pytest

from tests.helpers import REPO, TIPTOP, nobody_command, run
from tests.system.hostile import Target

SOURCE = Path(REPO) / "tests" / "data" / "hotcold.c"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


@pytest.fixture(scope="module")
def binaries() -> Iterator[dict[str, Path]]:
    """The program and a stripped copy, in a directory uid 65534 can reach (pytest's own
    temporary directories are 0700)."""
    where = Path(tempfile.mkdtemp(prefix="tiptop-where-"))
    os.chmod(where, 0o755)
    try:
        yield _build(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _build(where: Path) -> dict[str, Path]:
    program = where / "hotcold"
    # Frame pointers: the kernel walks its stacks (tests/system/test_where_calls.py is about
    # stacks without them).
    frames = "-fno-omit-frame-pointer"
    subprocess.run(["cc", "-O1", frames, "-o", str(program), str(SOURCE)], check=True)
    stripped = where / "hotcold.stripped"
    shutil.copy(program, stripped)
    if shutil.which("strip") is None:
        pytest.skip("no strip(1)")
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    return {"program": program, "stripped": stripped}


@pytest.fixture
def start() -> Iterator[list[Target]]:
    started: list[Target] = []
    yield started
    for t in started:
        t.stop()


def launch(started: list[Target], argv: list[str]) -> Target:
    target = Target(argv)
    started.append(target)
    return target


def text_shares(out: str) -> dict[str, float]:
    """Every refresh of the text output added up: share % per symbol, weighted by each
    refresh's samples; the symbols in the order of the lines of the busiest refresh."""
    totals: dict[str, float] = {}
    samples_all = 0
    for block in out.split("\n\n"):
        lines = block.strip().splitlines()
        heads = [i for i, line in enumerate(lines) if " samples of cpu-clock " in line]
        if not heads:
            continue
        m = re.search(r": (\d+) samples of cpu-clock", lines[heads[0]])
        assert m, lines
        n = int(m.group(1))
        samples_all += n
        for line in lines[heads[0] + 1 :]:
            if "  waiting  " in line:
                break  # where it waited off CPU (as root): test_where_offcpu's
            share, symbol, _module = line.split(None, 2)
            totals[symbol] = totals.get(symbol, 0.0) + float(share.rstrip("%")) * n
    assert samples_all > 50, out
    return {s: v / samples_all for s, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def check_hot_cold(shares: dict[str, float], out: str) -> None:
    ranked = list(shares)
    assert ranked[0] == "hot_loop", out
    assert 65 <= shares["hot_loop"] <= 95, out
    assert 8 <= shares.get("cold_loop", 0.0) <= 35, out


def test_as_root_hot_loop_first(binaries: dict[str, Path], start: list[Target]) -> None:
    target = launch(start, [str(binaries["program"])])
    # The tree's first level: the hottest functions (their callers are test_where_calls').
    r = run("-b", "--where", str(target.pid), "-n", "3", "-d", "1", "--depth", "1")
    assert r.returncode == 0, r
    assert r.stdout.count(" samples of cpu-clock at 1000 Hz") == 3, r.stdout
    check_hot_cold(text_shares(r.stdout), r.stdout)


def test_as_nobody_on_its_own_process(binaries: dict[str, Path], start: list[Target]) -> None:
    target = launch(start, [*NOBODY, str(binaries["program"])])
    cmd, env = nobody_command(["-m", "tiptop", "-b", "--where", str(target.pid), "-n", "3"])
    r = subprocess.run(
        [*cmd, "-d", "1", "--depth", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd="/",
    )
    assert r.returncode == 0, r
    check_hot_cold(text_shares(r.stdout), r.stdout)


def json_refreshes(pid: int, *args: str) -> list[dict[str, Any]]:
    r = run("-b", "--where", str(pid), "--format", "json", *args)
    assert r.returncode == 0, r
    return [json.loads(line) for line in r.stdout.splitlines()]


def symbol_ranges(program: Path) -> dict[str, tuple[int, int]]:
    """``name -> (start, end)`` of the program's functions, from nm(1)."""
    out = subprocess.run(
        ["nm", "-S", str(program)], capture_output=True, text=True, check=True
    ).stdout
    ranges = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            start, size = int(parts[0], 16), int(parts[1], 16)
            ranges[parts[3]] = (start, start + size)
    return ranges


def test_a_stripped_copy_gives_module_offsets(
    binaries: dict[str, Path], start: list[Target]
) -> None:
    """No symbols: ``[hotcold.stripped+0x...]`` names, ELF virtual addresses, whose
    shares inside hot_loop's and cold_loop's bytes (nm of the unstripped twin) add up as
    the functions' did."""
    target = launch(start, [str(binaries["stripped"])])
    recs = json_refreshes(target.pid, "-n", "3", "-d", "1")
    ranges = symbol_ranges(binaries["program"])
    total = 0
    per: dict[str, float] = {"hot_loop": 0.0, "cold_loop": 0.0}
    for rec in recs:
        functions = rec["functions"]
        assert isinstance(functions, list)
        for f in functions:
            m = re.fullmatch(r"\[hotcold\.stripped\+0x([0-9a-f]+)\]", f["symbol"])
            if f["module"] == "hotcold.stripped":
                assert m, f  # no symbol comes out of a stripped file
            total += f["samples"]
            if not m:
                continue
            address = int(m.group(1), 16)
            for name in per:
                lo, hi = ranges[name]
                if lo <= address < hi:
                    per[name] += f["samples"]
    assert total > 50, recs
    hot, cold = 100 * per["hot_loop"] / total, 100 * per["cold_loop"] / total
    assert 65 <= hot <= 95 and 8 <= cold <= 35, (hot, cold, recs)


def test_a_jit_map_file_is_honoured(binaries: dict[str, Path], start: list[Target]) -> None:
    """Code run from anonymous memory is named by /tmp/perf-PID.map, as perf does."""
    target = launch(start, [str(binaries["program"]), "0", "jit"])
    address = int(target.stdout.readline(), 16)
    jit_map = Path(f"/tmp/perf-{target.pid}.map")
    jit_map.write_text(f"{address:x} 100 jitted_hot_body\n")
    try:
        recs = json_refreshes(target.pid, "-n", "2", "-d", "1")
    finally:
        jit_map.unlink()
    samples = sum(int(str(r["samples"])) for r in recs)
    named = sum(
        f["samples"]
        for r in recs
        for f in r["functions"]
        if f["symbol"] == "jitted_hot_body" and f["module"] == jit_map.name
    )
    assert samples > 50 and named / samples > 0.9, recs


def test_a_process_that_exits_ends_the_run_with_one_line(
    binaries: dict[str, Path], start: list[Target]
) -> None:
    """Killed after tiptop's first refresh (and left a zombie, not reaped yet): the next
    refresh is the last, then one line, status 0, long before ``-n``."""
    target = launch(start, [str(binaries["program"])])
    env = {**os.environ, "PYTHONPATH": REPO}
    argv = [*TIPTOP, "-b", "--where", str(target.pid), "-n", "60", "-d", "0.5"]
    tiptop = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        assert tiptop.stdout is not None
        first = [tiptop.stdout.readline() for _ in range(3)]
        assert " samples of cpu-clock " in first[1] and "hot_loop" in "".join(first), first
        target.proc.kill()  # not waited for: a zombie until the fixture reaps it
        killed = time.monotonic()
        out, err = tiptop.communicate(timeout=25)
    finally:
        tiptop.kill()
    assert tiptop.returncode == 0, (out, err)
    assert time.monotonic() - killed < 20, "the run went on after the process exited"
    assert err == f"tiptop: --where {target.pid}: the process exited\n", err


def test_another_users_process_is_one_line_naming_the_errno(
    binaries: dict[str, Path], start: list[Target]
) -> None:
    target = launch(start, [str(binaries["program"])])  # root's
    cmd, env = nobody_command(["-m", "tiptop", "-b", "--where", str(target.pid), "-n", "1"])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd="/")
    assert r.returncode == 1 and r.stdout == "", r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r
    assert lines[0].startswith(f"tiptop: --where {target.pid}: cpu-clock: EACCES: "), lines
    assert "CAP_PERFMON" in lines[0] and "perf_event_paranoid" in lines[0], lines


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--where", "999999999"], 1, "--where 999999999: no such process"),
        (["--where", "abc"], 2, "--where: 'abc' is not a process id"),
        (["--where", "1", "--", "true"], 2, "--where takes the PID of a running process"),
    ],
)
def test_refusals_are_one_line(args: list[str], code: int, fragment: str) -> None:
    r = run("-b", "-n", "1", *args)
    assert r.returncode == code and fragment in r.stderr, r
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


assert TIPTOP  # the command run() runs


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_f_window_in_a_real_terminal(binaries: dict[str, Path], start: list[Target]) -> None:
    """The real program in tmux on ``-p PID``: ``f`` opens the selected task's functions
    beside its tree (hot_loop first), its first line naming the event; Esc closes it. The
    window's first interval may be a few ms, all in one 10 ms cold_loop phase: hot_loop
    must be first at a refresh within 30 s."""
    from tests.system.test_live_tmux import Tmux, has

    target = launch(start, [str(binaries["program"])])
    t = Tmux([*TIPTOP, "-p", str(target.pid), "-d", "1"], Path(REPO), cols=160)
    try:
        t.wait(has("hotcold"), "the program's row", timeout=40)
        t.keys("f")

        def hot_first(lines: list[str]) -> bool:
            pattern = r"\d+\.\d%  (hot|cold)_loop  hotcold"
            ranked = [ln for ln in lines if re.search(pattern, ln)]
            return bool(ranked) and "hot_loop" in ranked[0]

        lines = t.wait(hot_first, "hot_loop first in the f window", timeout=30)
        top = next(i for i, ln in enumerate(lines) if "Hottest functions" in ln)
        box = [ln.strip(" │") for ln in lines[top + 1 : top + 5]]
        right = [ln[ln.index("││") + 2 :] if "││" in ln else ln for ln in box]
        assert "sampling cpu-clock (time on CPU) at 1000 Hz" in right[0], lines
        assert re.match(r"[ +-]*\d+\.\d%  hot_loop  hotcold", right[2]), lines
        t.keys("Escape")
        t.wait(lambda ls: not has("Hottest functions")(ls), "the window to close")
        t.quit()
    finally:
        t.kill()


def test_csv_rows_as_the_other_batch_formats(
    binaries: dict[str, Path], start: list[Target]
) -> None:
    """One header line, then one row per function and refresh; a refresh's shares (the
    top 20 and ``[other]``) add up to 100."""
    import csv
    import io

    target = launch(start, [str(binaries["program"])])
    r = run("-b", "--where", str(target.pid), "--format", "csv", "-n", "2", "-d", "1")
    assert r.returncode == 0, r
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows and list(rows[0])[:4] == ["timestamp", "iteration", "interval", "pid"]
    for iteration in ("0", "1"):
        mine = [row for row in rows if row["iteration"] == iteration]
        assert mine and mine[0]["symbol"] == "hot_loop", rows
        assert abs(sum(float(row["share"]) for row in mine) - 100) < 0.1, mine


def test_a_full_ring_counts_what_the_kernel_dropped() -> None:
    """The real kernel on this thread: a one-page buffer (170 samples) over 0.5 s of CPU
    at 1000 Hz fills; once a drain hands the space back, the kernel's PERF_RECORD_LOST
    (written with the next record that fits, kernel/events/ring_buffer.c) says how many
    did not fit, and samples come again."""
    import threading

    from tiptop.kernel import perf_event_open
    from tiptop.kernel.attr import SAMPLE_IP, SAMPLE_TID
    from tiptop.kernel.ring import SampleRing
    from tiptop.where.profile import sampling_attr

    bare = sampling_attr().replace(sample_type=SAMPLE_IP | SAMPLE_TID)  # 24-byte records
    fd = perf_event_open(bare, threading.get_native_id(), -1, -1, 8)
    ring = SampleRing(fd, 1)
    try:

        def burn(seconds: float) -> None:
            # User mode: samples taken in the kernel (the clock read) are not kept.
            end = time.thread_time() + seconds
            while time.thread_time() < end:
                sum(range(20000))

        burn(0.5)
        first = ring.drain()
        assert len(first.ips) == 4096 // 24 and first.lost == 0, (len(first.ips), first.lost)
        assert set(first.tids) == {threading.get_native_id()}
        burn(0.05)
        again = ring.drain()
        assert len(again.ips) > 10 and again.lost > 100, (len(again.ips), again.lost)
    finally:
        ring.close()
        os.close(fd)
