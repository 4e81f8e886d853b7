"""The command as a user runs it, monitoring for real: batch and live (in tmux) against the
real kernel, the failures a user can cause while monitoring (one line, non-zero exit), the
uid 65534 path, the fallback to the software screen, and rows lining up under the header."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, nobody_command, run
from tests.system.test_cli import NO_PMU_RC
from tests.system.test_live_tmux import Tmux, has
from tiptop.host import Host

REPO = Path(__file__).resolve().parents[2]

#: A screen built to break alignment: a format narrower than its header (``%4.1f`` under
#: ``    %CPU``, ``%3.1f`` under ``  F/F``), a counter that never opens (``?``), a ratio that
#: is ``-`` for idle tasks and a number for busy ones.
ALIGN_RC = """<tiptop>
  <screen name="align" desc="widths">
    <counter alias="F" config="2" type="SOFTWARE" />
    <counter alias="C" config="0" type="1999" />
    <column header="    %CPU" format="%4.1f" desc="cpu" expr="CPU_TOT" />
    <column header="   Cnt" format="%6.0f" desc="count" expr="delta(C)" />
    <column header="  F/F" format="%3.1f" desc="ratio" expr="delta(F) / delta(F)" />
    <column header=" FLT" format="%4.0f" desc="faults" expr="delta(F)" />
  </screen>
</tiptop>
"""

ROW = re.compile(r"^ *\d+[-+ ] ")


def misaligned(header: str, rows: list[str], ncells: int) -> list[str]:
    """Rows whose first ``ncells`` cells do not end where the header's columns end."""
    marks = str.maketrans("[]\u25bc", "   ")  # the sort column's brackets, the live mark
    ends = [m.end() for m in re.finditer(r"\S+", header.translate(marks))]
    want = ends[1 : 1 + ncells]
    bad = []
    for row in rows:
        got = [m.end() for m in re.finditer(r"\S+", row)][1 : 1 + ncells]
        if got != want:
            bad.append(row)
    return bad


def fitting(rows: list[str]) -> list[str]:
    """Rows whose FLT cell fits its ``%4.0f`` width: another process may fault 10,000
    times an interval, and printf widens such a cell (as the original's does), so only
    rows whose numbers fit can line up; the test's own child always fits."""
    return [x for x in rows if len(x.split()[4]) <= 4]


def test_batch_rows_line_up_under_the_header(tmp_path: Path) -> None:
    (tmp_path / ".tiptoprc").write_text(ALIGN_RC)
    code = "import time\nx = []\nwhile True: time.sleep(0.01); x.append(bytearray(1 << 16))"
    busy = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.2)
        r = run("-W", str(tmp_path), "-S", "align", "-b", "-n", "2", "-d", "0.5", "-i")
    finally:
        busy.kill()
        busy.wait()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = next(x for x in lines if "COMMAND" in x)
    assert header == "  PID     [%CPU]   Cnt   F/F  FLT COMMAND "
    rows = [x for x in lines if ROW.match(x)]
    assert len(rows) > 10
    mine = [x for x in rows if x.split()[0].rstrip("+-") == str(busy.pid)]
    # The busy child faults (numbers in F/F and FLT); idle tasks show '-' under F/F.
    assert mine and any(x.split()[3] == "1.0" for x in mine), mine
    assert any(x.split()[3] == "-" for x in rows)
    assert all(x.split()[2] == "?" for x in rows)
    shown = fitting(rows)
    assert len(shown) > 10 and set(mine) <= set(shown), rows
    assert misaligned(header, shown, 4) == []


def test_live_rows_line_up_under_the_header(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    (tmp_path / ".tiptoprc").write_text(ALIGN_RC)
    t = Tmux([*TIPTOP, "-W", str(tmp_path), "-S", "align", "-d", "0.3", "-i"], tmp_path)
    try:
        lines = t.wait(lambda ls: sum(bool(ROW.match(x)) for x in ls) > 10, "rows")
        time.sleep(0.7)  # a couple of refreshes with real intervals
        lines = t.screen()
        header = lines[3]
        assert header.rstrip() == "  PID     [%CPU]\u25bc  Cnt   F/F  FLT COMMAND"
        rows = fitting([x for x in lines[4:] if ROW.match(x)])
        assert len(rows) > 5 and misaligned(header, rows, 4) == []
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


def test_batch_prints_exactly_n_full_intervals() -> None:
    t0 = time.monotonic()
    r = run("-b", "-n", "3", "-d", "0.2", "-i", "--format", "json", "-S", "sched")
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted({x["iteration"] for x in recs}) == [0, 1, 2]
    # No primer: the first printed iteration already covers one full delay, as does
    # every other (measured by the program's own clock; a loaded machine may run a
    # refresh late, so only the lower bound is the program's promise).
    intervals = {x["iteration"]: x["interval"] for x in recs}
    assert all(i >= 0.18 for i in intervals.values()), intervals
    assert elapsed >= 0.6
    # Text mode on the default screen: three blocks, each ended by an empty line.
    r = run("-b", "-n", "3", "-d", "0.2", "-i", "--timestamp")
    assert r.returncode == 0, r.stderr
    body = r.stdout.split("\n")
    head = next(i for i, x in enumerate(body) if "COMMAND" in x)
    iters = [int(x.split()[0]) for x in body[head + 1 :] if x]
    assert sorted(set(iters)) == [0, 1, 2]
    assert r.stdout.endswith("\n\n") and r.stdout.count("\n\n") == 4  # preamble + 3 blocks


#: What a plain ``tiptop -b`` has no use for, each imported only by the path that needs it:
#: every start pays for what it imports (benchmarks/README.md, "Start-up"). numpy.ma came
#: with ``np.unique``.
NOT_AT_START = (
    "numpy.ma",
    "psutil",  # the preamble's uptime and load are the kernel's, --check asks psutil
    "tempfile",  # and shutil, random: cffi's generation only (kernel._ffi.generate)
    "shutil",
    "random",
    "threading",  # kernel._ffi's one lock is _thread's
    "numpy.typing",  # annotations only
    "tiptop.workload",  # a frame's cgroup rows name them; a batch run of tasks has none
    "tiptop.engine.count.cgroups",  # --by cgroup as root
    "tiptop.table.tree",  # a folded view
    "csv",
    "json",
    "yaml",
    "urwid",
    "xml.etree.ElementTree",
    "tiptop.live",
    "tiptop.exporter",
    "tiptop.recording",
    "tiptop.where",
    "tiptop.selftest",
)


def test_a_batch_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    """``tiptop -b -n 1`` on the default screen, in process: none of ``NOT_AT_START`` but
    what the dependencies import themselves (numpy 1.x imported numpy.ma)."""
    # main(), not ``python -m tiptop``: the command ends its process at once (exit_now).
    run_tiptop = (
        "import contextlib, io, sys\n"
        "from tiptop.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['-b', '-n', '1', '-d', '0.1'])\n"
    )
    floor = "import sys, numpy, _cffi_backend\n"
    env = {**os.environ, "HOME": str(tmp_path)}
    loaded = []
    for code in (run_tiptop, floor):
        r = subprocess.run(
            [sys.executable, "-c", code + "print(' '.join(sys.modules))\n"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        loaded.append(set(r.stdout.split()))
    ours, theirs = loaded
    assert "tiptop.engine.sampler" in ours, ours
    assert sorted(ours.intersection(NOT_AT_START) - theirs) == []


def test_no_pmu_starts_on_state_and_says_so(tmp_path: Path) -> None:
    (tmp_path / ".tiptoprc").write_text(NO_PMU_RC)
    r = run("-W", str(tmp_path), "-b", "-n", "1", "-d", "0.1", "-i")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "tiptop: screen 'default' cannot count here (C: ENOENT (No such file or directory)); "
        "starting on screen 'state' (no hardware events)"
    ]
    assert re.search(r"^Screen \d+: state$", r.stdout, re.M)
    # -S names the screen: no fallback, the cells say '?'.
    r = run("-W", str(tmp_path), "-S", "default", "-b", "-n", "1", "-d", "0.1", "-i")
    assert "Screen 0: default" in r.stdout and "starting on" not in r.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_no_pmu_fallback_is_said_on_the_message_line(tmp_path: Path) -> None:
    """Live mode takes the terminal over: the fallback notice must reach the screen, not a
    stderr line that the first draw wipes out."""
    (tmp_path / ".tiptoprc").write_text(NO_PMU_RC)
    t = Tmux([*TIPTOP, "-W", str(tmp_path), "-d", "0.5", "-i"], tmp_path)
    try:
        lines = t.wait(has("starting on screen 'state'"), "the fallback notice")
        assert "cannot count here (C: ENOENT" in lines[2], lines[:4]
        assert re.search(r"screen +\d+: state", lines[1]), lines[1]
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_config_problems_reach_the_error_window(tmp_path: Path) -> None:
    """A bad configuration line printed to stderr would be wiped by live mode's first draw:
    the message line says how many there are, and ``e`` lists them with file:line:column."""
    bad = REPO / "tests" / "data" / "bad.tiptoprc"
    t = Tmux([*TIPTOP, "-W", str(bad), "-S", "sched", "-d", "0.5"], tmp_path)
    try:
        lines = t.wait(has("problems in the configuration"), "the notice")
        assert re.search(r"\b8 problems in the configuration \('e' lists them\)", lines[2]), lines
        t.keys("e")
        lines = t.wait(has("bad.tiptoprc:14:50: Invalid expression"), "the error window")
        assert any("bad.tiptoprc:10:50: Bad type 'NOPE'" in x for x in lines), lines
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


def test_output_to_full_device_is_one_line() -> None:
    r = run("-b", "-n", "2", "-d", "0.1", "-S", "sched", "-o", "/dev/full")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "tiptop: cannot write output: No space left on device\n"


def _redirected(redirect: str, *args: str) -> list[str]:
    """tiptop's command line with ``args``, run by a shell that applies ``redirect``
    first (``>&-``, ``2>&-``, ``</dev/null``)."""
    return ["sh", "-c", f'exec "$@" {redirect}', "sh", *TIPTOP, *args]


def _with_closed(redirect: str, *args: str) -> subprocess.CompletedProcess[str]:
    """:func:`run`, an fd closed first by the shell's ``redirect`` (``>&-``, ``2>&-``)."""
    return subprocess.run(
        _redirected(redirect, *args),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("-b", "-n", "1", "-d", "0.1", "-S", "sched"), "cannot write output: Bad file descriptor"),
        (("--version",), "Bad file descriptor"),
    ],
)
def test_closed_stdout_is_one_line(args: tuple[str, ...], line: str) -> None:
    """``tiptop >&-``: Python starts with ``sys.stdout`` None, whose first write was a
    traceback; now the run ends on one line, as cat(1) does (EBADF)."""
    r = _with_closed(">&-", *args)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"tiptop: {line}\n")


def test_with_stdout_closed_no_file_of_tiptop_s_takes_fd_1(tmp_path: Path) -> None:
    """``tiptop -b -o FILE -- CMD >&-``: /dev/null holds fd 1 before tiptop opens
    anything, so ``-o``'s file, the first it opens, is not fd 1 (open(2) gives the lowest
    free fd), where a write meant for stdout would land; CMD still gets fd 1 closed, as
    the user gave it (the hold is close-on-exec)."""
    out = tmp_path / "out.txt"
    probe = (
        "import os, sys\n"
        "print(os.readlink(f'/proc/{os.getppid()}/fd/1'), os.path.exists('/proc/self/fd/1'),"
        " file=sys.stderr)\n"
    )
    args = ("-b", "-n", "1", "-d", "0.1", "-S", "sched", "-o", str(out))
    r = _with_closed(">&-", *args, "--", sys.executable, "-c", probe)
    assert (r.returncode, r.stderr) == (0, "/dev/null False\n")
    assert re.search(r"^Screen \d+: sched$", out.read_text(), re.M)


def test_closed_stderr_leaves_the_run_alone() -> None:
    """``tiptop -b 2>&-``: what it would say goes nowhere, and the run ends as usual (at
    b1402ec its exit flushed the None that stood for stderr: a traceback, status 1)."""
    r = _with_closed("2>&-", "-b", "-n", "1", "-d", "0.1", "-S", "sched")
    assert r.returncode == 0, r.stdout
    assert re.search(r"^Screen \d+: sched$", r.stdout, re.M), r.stdout


@pytest.mark.parametrize("stdin", ["</dev/null", "<&-"])
def test_live_mode_without_a_terminal_on_stdin_is_one_line(stdin: str) -> None:
    """Live mode on a terminal (a pty as stdout) with stdin not one, or closed: one line
    where urwid's raw display failed, a traceback (stdin closed) or "Operation not
    permitted"."""
    master, slave = pty.openpty()
    try:
        r = subprocess.run(
            _redirected(stdin, "-d", "0.5", "-n", "1"),
            stdout=slave,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(slave)
        os.close(master)
    assert (r.returncode, r.stderr) == (
        1,
        "tiptop: live mode reads keys from standard input, which is not a terminal "
        "(-b prints batch output)\n",
    )


def test_no_such_pid() -> None:
    r = run("-b", "-n", "1", "-p", "999999")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "tiptop: -p 999999: no such process\n"


def test_kernel_mode_refused_for_nobody(root_only: None) -> None:
    if Host.read().paranoid != 2:
        pytest.skip(f"needs perf_event_paranoid=2 (it is {Host.read().paranoid})")
    cmd, env = nobody_command(["-m", "tiptop", "-K", "-b", "-n", "1", "-d", "0.1"])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/tmp", timeout=60)
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    assert r.stderr == (
        "tiptop: Kernel mode (-K --kernel) not available. You are not root, the binary is "
        "not setuid, and the paranoia level is too high (perf_event_paranoid is 2; sysctl "
        "kernel.perf_event_paranoid=1 allows it).\n"
    )


def test_no_pmu_fallback_notice_goes_to_the_error_file(tmp_path: Path) -> None:
    """``-E FILE`` gets the start-up fallback notice, as it gets every message (issue 15,
    item 12): stderr stays empty."""
    (tmp_path / ".tiptoprc").write_text(NO_PMU_RC)
    log = tmp_path / "errors.log"
    r = run("-W", str(tmp_path), "-b", "-n", "1", "-d", "0.1", "-i", "-E", str(log))
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert log.read_text().splitlines()[0] == (
        "tiptop: screen 'default' cannot count here (C: ENOENT (No such file or directory)); "
        "starting on screen 'state' (no hardware events)"
    )


def test_p_of_another_users_process_says_why_no_row_shows(root_only: None) -> None:
    """As uid 65534, ``-b -p 1`` (init, root's) prints no rows: one line says why."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    cmd, env = nobody_command(["-m", "tiptop", "-b", "-n", "1", "-d", "0.1", "-S", "sched"])
    r = subprocess.run([*cmd, "-p", "1"], capture_output=True, text=True, env=env, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    assert (
        "tiptop: -p 1: that process belongs to another user; "
        "without root only your own processes are shown"
    ) in r.stderr.splitlines()
    assert "only pid 1" in r.stdout and not re.search(r"^ +1 ", r.stdout, re.M)


# --------------------------------------------------------------------------- live


def _wrapped(tmp_path: Path, args: list[str]) -> list[str]:
    """Run tiptop ARGS and write its exit status to ``tmp_path/status`` (Ctrl-C reaches
    only tiptop: the wrapper's own SIGINT handler is reset to the default across exec)."""
    script = tmp_path / "wrap.py"
    script.write_text(
        "import signal, subprocess, sys\n"
        "signal.signal(signal.SIGINT, lambda *a: None)\n"
        f"r = subprocess.call({[*TIPTOP, *args]!r})\n"
        f"open({str(tmp_path / 'status')!r}, 'w').write(str(r))\n"
    )
    return [sys.executable, str(script)]


def _status(tmp_path: Path, timeout: float = 10) -> int:
    """The wrapped tiptop's exit status, once it has ended."""
    path = tmp_path / "status"
    end = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < end, "tiptop did not exit"
        time.sleep(0.05)
    return int(path.read_text())


@pytest.fixture
def tmux_needed() -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")


def test_live_ctrl_c_exits_130(tmp_path: Path, tmux_needed: None) -> None:
    t = Tmux(_wrapped(tmp_path, ["-d", "0.3", "-S", "sched"]), tmp_path)
    try:
        t.wait(has("screen  "), "the live screen")
        t.keys("C-c")
        assert _status(tmp_path) == 130
    finally:
        t.kill()


def test_live_sigterm_exits_143_with_the_terminal_restored(
    tmp_path: Path, tmux_needed: None
) -> None:
    script = tmp_path / "wrap.py"
    script.write_text(  # tiptop's pid to a file, its status to another
        "import subprocess\n"
        f"p = subprocess.Popen({[*TIPTOP, '-d', '0.3', '-S', 'sched']!r})\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(p.pid))\n"
        f"open({str(tmp_path / 'status')!r}, 'w').write(str(p.wait()))\n"
    )
    t = Tmux([sys.executable, str(script)], tmp_path)
    try:
        t.wait(has("screen  "), "the live screen")
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGTERM)
        assert _status(tmp_path) == 143
        t.wait(lambda ls: not has("screen  ")(ls), "the terminal restored")
    finally:
        t.kill()


def test_live_w_writes_current_options_once(tmp_path: Path, tmux_needed: None) -> None:
    """``W`` writes $XDG_CONFIG_HOME/tiptop/tiptoprc (not ./.tiptoprc) and says so."""
    xdg = tmp_path / "xdg"
    wrapped = _wrapped(tmp_path, ["-d", "0.3", "-S", "sched", "-i"])
    t = Tmux(["env", f"XDG_CONFIG_HOME={xdg}", *wrapped], tmp_path, cols=200)
    rc = xdg / "tiptop" / "tiptoprc"
    try:
        t.wait(has("screen  "), "the live screen")
        t.keys("W")
        t.wait(has(f"{rc} written"), "the W message")
        t.keys("W")
        t.wait(has(f"{rc} not written: it already exists"), "the refusal")
        t.keys("q")
        assert _status(tmp_path) == 0
    finally:
        t.kill()
    from tiptop.cli import host_target, load_screens
    from tiptop.screens import load_file

    assert not (tmp_path / ".tiptoprc").exists()
    conf = load_file(str(rc), host_target())
    assert conf.problems == []
    assert conf.options["delay"] == "0.3" and conf.options["idle"] == "1"
    assert [s.name for s in conf.screens] == [s.name for s in load_screens(None).screens]


def test_live_spawned_command_status(tmp_path: Path, tmux_needed: None) -> None:
    args = ["-d", "0.2", "-S", "sched", "--", "sh", "-c", "sleep 0.3; exit 3"]
    t = Tmux(_wrapped(tmp_path, args), tmp_path)
    try:
        t.wait(has("screen  "), "the live screen")
        # The command ends; live mode says so and stays until q (issue 15, item 12).
        t.wait(has("'sh' ended, exit status 3 (q quits)"), "the end of the command")
        t.keys("q")
        assert _status(tmp_path) == 3  # the command's status
    finally:
        t.kill()


def test_live_help_and_tasks_line_from_the_real_command(tmp_path: Path, tmux_needed: None) -> None:
    """The real command in a terminal: the help window names this CPU as the original
    does (``Target: x86, model = %02X_%02X`` from /proc/cpuinfo, via cli's host_target),
    and the ``Tasks:`` line never shows ``0 total`` (the count is unknown until the first
    refresh, and this test run is itself a tracked task)."""
    from tiptop.cli import host_target
    from tiptop.live.windows.help import target_line

    expected = target_line(host_target())
    if host_target().arch == "x86" and host_target().model is not None:
        assert re.fullmatch(r"Target: x86, model = [0-9A-F]{2}_[0-9A-F]{2}", expected)
    elif host_target().arch == "x86":  # a cpuinfo with no x86 family (TIPTOP_TEST_CPUINFO: Arm)
        assert expected == "Target: x86"
    t = Tmux(_wrapped(tmp_path, ["-d", "0.05", "-S", "sched"]), tmp_path)
    try:
        seen: list[str] = []

        def tasks_counted(screen: list[str]) -> bool:
            seen.append(screen[1])
            return screen[1].startswith("Tasks:")

        t.wait(tasks_counted, "the Tasks line")
        assert not any("  0 total" in line for line in seen), seen
        t.keys("h")
        t.wait(has(expected), "the help window's target line")
        t.keys("q")
        assert _status(tmp_path) == 0
    finally:
        t.kill()
