"""``tiptop -- cmd``: exact page faults of a spawned program, exit status, exec failure."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, run

RC = """<tiptop><screen name="faults" desc="page faults">
<counter alias="PF" config="page-faults"/>
<column header="    PF" format="%6.0f" expr="delta(PF)"/>
</screen></tiptop>
"""

# Start-up faults vary by a few pages between runs, so the program sleeps before and
# after touching N fresh pages: the touch lands in intervals of its own, and the faults
# of the non-zero run between quiet intervals are exactly N.
PROG = textwrap.dedent("""
    import mmap, time
    n = {n}
    m = mmap.mmap(-1, n * 4096)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    time.sleep(1.0)
    for i in range(0, n * 4096, 4096):
        m[i] = 1
    time.sleep(1.0)
""")


@pytest.mark.parametrize("n", [500, 3000])
def test_page_faults_exact(tmp_path: Path, n: int) -> None:
    (tmp_path / ".tiptoprc").write_text(RC)
    r = subprocess.run(
        [
            *TIPTOP,
            "-b",
            "-W",
            str(tmp_path),
            "-S",
            "faults",
            "--format",
            "csv",
            "-d",
            "0.1",
            "--",
            sys.executable,
            "-c",
            PROG.format(n=n),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    deltas = [float(x["PF_delta"] or 0) for x in csv.DictReader(io.StringIO(r.stdout))]
    first_quiet = deltas.index(0.0)
    run: list[float] = []
    for d in deltas[first_quiet:]:
        if d == 0 and run:
            break
        if d:
            run.append(d)
    assert sum(run) == n, deltas


def test_exec_failure_is_raised_by_release() -> None:
    from tiptop import spawn

    child = spawn.fork_blocked(["/nonexistent/prog-zz"])
    with pytest.raises(spawn.ExecFailed, match="prog-zz: command not found"):
        child.release()
    assert child.status == 127  # reaped by release: no zombie left for a row
    child = spawn.fork_blocked(["/etc/passwd"])  # exists, not executable: EACCES
    with pytest.raises(spawn.ExecFailed, match="cannot run '/etc/passwd': Permission denied"):
        child.release()


def test_command_not_found_is_one_line_at_once() -> None:
    """``tiptop -b -d 60 -- /nonexistent``: the one line, exit 127, no row (not even the
    forked child's) and no wait for the first refresh. The bound is half the delay: the
    only wait the program has is the delay; start-up takes a few seconds at most, even on
    a loaded machine."""
    t0 = time.monotonic()
    r = run("-b", "-d", "60", "--", "/nonexistent/prog-zz", timeout=120)
    elapsed = time.monotonic() - t0
    assert r.returncode == 127, r.stderr
    assert r.stdout == ""
    mine = [line for line in r.stderr.splitlines() if "prog-zz" in line]
    assert mine == ["tiptop: /nonexistent/prog-zz: command not found"], r.stderr
    assert "Traceback" not in r.stderr
    assert elapsed < 30, elapsed


def test_exit_status_and_signal() -> None:
    from tiptop import spawn

    child = spawn.fork_blocked(["sh", "-c", "exit 7"])
    assert not child.exited()
    child.release()
    assert child.reap() == 7
    child = spawn.fork_blocked(["sh", "-c", "kill -TERM $$"])
    child.release()
    assert child.reap() == 128 + 15


@pytest.mark.parametrize(("script", "status"), [("exit 7", 7), ("kill -TERM $$", 128 + 15)])
def test_peek_tells_the_status_without_reaping(script: str, status: int) -> None:
    """Live mode says a ``--`` command's status when it ends, while the zombie stays for
    the last reading of its counters (waitid(2) WNOWAIT)."""
    from tiptop import spawn

    child = spawn.fork_blocked(["sh", "-c", script])
    assert child.peek() is None
    child.release()
    deadline = time.monotonic() + 10
    while child.peek() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.peek() == status
    stat = Path(f"/proc/{child.pid}/stat").read_text()
    assert stat.rsplit(") ", 1)[1][0] == "Z"  # a zombie: not reaped yet
    assert child.reap() == status and child.peek() == status


def test_cli_exit_status_passthrough() -> None:
    r = run("-b", "-d", "0.1", "-S", "sched", "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r.stderr


@pytest.mark.parametrize("mode", [(), ("-H",), ("-c",)])
def test_a_command_that_ends_at_once_is_named_after_its_program(mode: tuple[str, ...]) -> None:
    """``tiptop -- true``: the child execs and exits before any scan sees its new name;
    its one row (DEAD) is named by the zombie's stat, not by tiptop's forked copy."""
    r = run("-b", *mode, "-d", "0.2", "-S", "sched", "--", "true")
    assert r.returncode == 0, r.stderr
    (row,) = [line for line in r.stdout.splitlines() if line.endswith(" DEAD")]
    name = "[true]" if mode == ("-c",) else "true"  # a zombie has no command line (proc(5))
    assert row.split()[-2] == name, r.stdout


# ---------------------------------------------------------------------- process trees
# A grandchild of the spawned command (``sh -c 'python3 ...; sleep'``: the trailing command
# keeps sh from exec'ing python in its place) touches N fresh pages, then burns CPU.
TREE_PROG = textwrap.dedent("""
    import mmap, time
    n = {n}
    m = mmap.mmap(-1, n * 4096)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(0, n * 4096, 4096):
        m[i] = 1
    end = time.process_time() + {busy}
    while time.process_time() < end:
        pass
""")


def run_tree(n: int, busy: float, tail: float = 0.4) -> tuple[int, list, list]:
    """Spawn ``sh -c 'python3 TREE_PROG; sleep tail'`` under a Sampler with the ``sched``
    screen, refresh every 0.1 s while it runs; returns its pid, the frames and messages."""
    from tiptop import spawn
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tiptop.screens import builtin_screens
    from tiptop.screens.model import Target

    (scr,) = [s for s in builtin_screens(Target()) if s.name == "sched"]
    prog = TREE_PROG.format(n=n, busy=busy)
    child = spawn.fork_blocked(["sh", "-c", f"{sys.executable} -c '{prog}'; sleep {tail}"])
    s = Sampler(scr, SamplerConfig(only_pid=child.pid))
    frames = []
    try:
        s.attach_spawned(child.pid)
        s.start()
        child.release()
        while not child.exited():
            time.sleep(0.1)
            frames.append(s.refresh())
        return child.pid, frames, s.messages.lines()
    finally:
        s.close()
        child.kill()


def test_spawned_row_counts_its_process_tree() -> None:
    """The spawned row counts its python grandchild: exactly N page faults (and more from
    the interpreter's start) and its CPU burn; the grandchild has no row of its own."""
    n = 3000
    pid, frames, messages = run_tree(n, busy=1.0)
    pf = frames[0].counters.index("PF")
    tc = frames[0].counters.index("TC")
    cols = [h.strip() for h in frames[0].headers]
    faults = clock = cpu_seconds = 0.0
    for f in frames:
        assert set(f.tid.tolist()) <= {pid}, f.tid  # descendants are not rows
        if len(f.tid):
            faults += f.counter_delta[0, pf]
            clock += f.counter_delta[0, tc]
            cpu_seconds += f.values[0, cols.index("%CPU")] / 100 * f.interval
    assert faults >= n, (faults, messages)
    # task-clock counts the whole tree: the 1 s burn (CPU time, whatever the machine's
    # load) plus the interpreter's start.
    assert 1.0e9 <= clock <= 1.6e9, clock
    # %CPU from /proc follows the same tree, reaped grandchild included (cutime): the CPU
    # seconds add up to the task-clock's (the per-interval tick rounding cancels out in
    # the sum; the margin is a few USER_HZ ticks and the forked child's time before exec).
    assert 0.9 <= cpu_seconds <= 1.7, cpu_seconds
    assert abs(cpu_seconds - clock / 1e9) <= 0.1, (cpu_seconds, clock)


def test_cli_spawned_command_counts_its_children() -> None:
    """``tiptop -b --format csv -S sched -- sh -c 'python3 ...; sleep'``: the one row (the
    shell) carries its python child's N page faults and its CPU burn."""
    n = 2000
    prog = TREE_PROG.format(n=n, busy=0.8)
    cmd = [
        *TIPTOP,
        "-b",
        "--format",
        "csv",
        "-d",
        "0.2",
        "-S",
        "sched",
        "--",
        "sh",
        "-c",
        f"{sys.executable} -c '{prog}'; sleep 0.4",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows and len({x["pid"] for x in rows}) == 1, r.stdout
    assert sum(float(x["PF_delta"] or 0) for x in rows) >= n, r.stdout
    # The child's 0.8 s burn is CPU time, whatever the machine's load: the row's %CPU
    # over its intervals adds up to it (plus the interpreter's start), as task-clock does
    # (margin: a few USER_HZ ticks, see test_spawned_row_counts_its_process_tree).
    cpu = sum(float(x["%CPU"]) / 100 * float(x["interval"]) for x in rows)
    clock = sum(float(x["TC_delta"] or 0) for x in rows) / 1e9
    assert 0.8 <= clock <= 1.4, r.stdout
    assert abs(cpu - clock) <= 0.1, (cpu, clock)


def test_spawned_tree_reopened_after_screen_switch(tmp_path: Path) -> None:
    """After ``reconfigure`` (a screen switch) the tree's groups are reopened on the root
    and on every live descendant: the grandchild's later N page faults still count. The
    grandchild says it is alive (a file) and waits for the test's go (another file) before
    its page touches, so the switch falls between the two whatever the machine's load."""
    from tiptop import spawn
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tiptop.screens import builtin_screens
    from tiptop.screens.model import Target

    n = 2000
    ready, go = tmp_path / "ready", tmp_path / "go"
    (scr,) = [s for s in builtin_screens(Target()) if s.name == "sched"]
    wait = (
        f"import os, time\nopen({str(ready)!r}, 'w').close()\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\n"
    )
    prog = wait + TREE_PROG.format(n=n, busy=0.0)
    child = spawn.fork_blocked(["sh", "-c", f'{sys.executable} -c "{prog}"; sleep 0.3'])
    s = Sampler(scr, SamplerConfig(only_pid=child.pid))
    try:
        s.attach_spawned(child.pid)
        s.start()
        child.release()
        deadline = time.monotonic() + 60
        while not ready.exists():  # the grandchild is alive, before its page touches
            assert time.monotonic() < deadline and not child.exited(), "no grandchild"
            time.sleep(0.01)
        s.refresh()
        s.reconfigure(scr)
        s.refresh()  # restarts: the new groups' baseline
        go.touch()
        faults = 0.0
        while not child.exited():
            time.sleep(0.1)
            f = s.refresh()
            assert set(f.tid.tolist()) <= {child.pid}, f.tid
            if len(f.tid):
                faults += f.counter_delta[0, f.counters.index("PF")]
        assert faults >= n, faults
    finally:
        s.close()
        child.kill()


def test_cli_spawned_command_busy_until_exit_prints_its_last_interval() -> None:
    """``tiptop -b --format csv -S sched -d 2 -- python3 -c '<spin 0.8 s>'``: the command
    ends before the first refresh on an idle machine (after a few on a loaded one); its
    last row (dead) carries that interval's task-clock and a %CPU taken from its final
    times, before tiptop reaps it."""
    spin = "import time\ne = time.process_time() + 0.8\nwhile time.process_time() < e: pass"
    cmd = [
        *TIPTOP,
        "-b",
        "--format",
        "csv",
        "-S",
        "sched",
        "-d",
        "2",
        "--",
        sys.executable,
        "-c",
        spin,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows and len({x["pid"] for x in rows}) == 1, r.stdout
    assert [x["dead"] for x in rows] == ["0"] * (len(rows) - 1) + ["1"], r.stdout
    # The spin is CPU time, whatever the machine's load, plus the interpreter's start and
    # exit; each row's %CPU over its interval is its task-clock (a USER_HZ tick or two).
    tc = sum(float(x["TC_delta"]) for x in rows) / 1e9
    assert 0.8 <= tc <= 1.2, r.stdout
    last = rows[-1]
    cpu, interval = float(last["%CPU"]), float(last["interval"])
    assert float(last["TC_delta"]) > 0, last
    assert abs(cpu / 100 * interval - float(last["TC_delta"]) / 1e9) <= 0.05, last
