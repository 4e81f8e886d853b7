"""The command as a user runs it (subprocess): one line + exit code for every user error,
no traceback; -h/-v/--version answer without probing the PMU."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, hardware_pmu_error, nobody_command, run
from tiptop.kernel.explain import NO_PMU


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["-d", "0.001"], 2, "delay must be at least 0.01"),
        (["-d"], 2, "missing value after -d"),
        (["-bi", "-q"], 2, "unknown option '-q'"),
        (["--nope"], 2, "unknown option '--nope'"),
        (["--"], 2, "no command after --"),
        (["-b", "--", ""], 2, "empty command name after --"),
        (["-u", "no_such_user_zz"], 2, "User name 'no_such_user_zz' does not exist."),
        (["-n", "many"], 2, "not a whole number"),
        (["--format=xml"], 2, "not one of text, csv, json"),
        (["-W", "/nonexistent/dir"], 2, "does not exist"),
        (["--export", "/tmp/screens.txt"], 2, "must end in .yaml"),
        # Odd values: refused with one line, never accepted by Python's lenient parsers
        # nor left to overflow later (a delay past select(2)'s range, a uid past uid_t).
        (["-d", "nan"], 2, "not a number of seconds"),
        (["-d", "inf"], 2, "not a number of seconds"),
        (["-d", "1e300"], 2, "at most 604800 s"),
        (["-d", "1_0"], 2, "not a number of seconds"),
        (["-n", "1_000"], 2, "not a whole number"),
        (["-n", "-1"], 2, "must not be negative"),
        (["-n", "\uff15"], 2, "not a whole number"),  # a full-width 5
        (["-u", "99999999999999999999"], 2, "neither a user name nor a uid"),
        (["-p", ""], 2, "-p: empty value"),
        (["-w", ""], 2, "-w: empty value"),
        (["-S", ""], 2, "-S: empty value"),
        (["-S", "99"], 2, "no screen number 99"),
        (["-o", "/nonexistent/dir/x", "-b"], 1, "cannot open '/nonexistent/dir/x'"),
        # An option of another mode (tiptop/options/modes.py), never silently ignored.
        (["-b", "--from", "10:00"], 2, "--from: only with --plot or --replay"),
        (["-b", "--web-config", "x.yml"], 2, "--web-config: only with --serve"),
        (["--selftest", "--replay", "x"], 2, "--replay and --selftest: one at a time"),
        (["-b", "--by", "pid"], 2, "--by pid: only with --serve or --textfile"),
    ],
)
def test_user_errors_are_one_line(argv: list[str], code: int, fragment: str) -> None:
    r = run(*argv)
    assert r.returncode == code, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("tiptop: ") and fragment in lines[0]


def test_help_and_versions() -> None:
    r = run("-h")
    assert r.returncode == 0 and r.stdout.startswith("Usage: tiptop [option]")
    for flag in ("-b", "--cpu-min", "--list-screens", "--format", "--check", "--export"):
        assert f"\t{flag}" in r.stdout
    r = run("-v")
    assert r.returncode == 0 and r.stdout.startswith("This is tiptop version ")
    r = run("--version")
    assert r.returncode == 0 and "No warranty." in r.stdout


#: A screen that can never count: the kernel answers ENOENT for a PMU type no PMU has.
NO_PMU_RC = """<tiptop>
  <screen name="default" desc="nothing counts here">
    <counter alias="C" config="0" type="1999" />
    <column header="   Cnt" format="%6.0f" desc="count" expr="delta(C)" />
  </screen>
</tiptop>
"""


def test_list_screens_format_and_availability(tmp_path: Path) -> None:
    (tmp_path / ".tiptoprc").write_text(NO_PMU_RC)
    r = run("-W", str(tmp_path), "--list-screens")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Available screens:"
    # Where no core PMU shows in sysfs, the no-PMU sentence once after the screens.
    if lines[-1] == NO_PMU:
        assert "no hardware PMU here]" in r.stdout
        lines.pop()
    # ' %2d: '%s', %s' (docs/original.md 1) then our [can run here / why not].
    pat = re.compile(r"^ ?(\d{1,2}): '([^']+)', (.*)  \[(.+)\]$")
    parsed = [pat.match(x) for x in lines[1:]]
    assert all(parsed), lines
    names = [m.group(2) for m in parsed if m]
    assert [int(m.group(1)) for m in parsed if m] == list(range(len(names)))
    # The file's "default" replaces the built-in one in place (no duplicate).
    assert names[:2] == ["default", "branch"] and names.count("default") == 1
    assert "sched" in names
    why = {m.group(2): m.group(4) for m in parsed if m}
    assert why["default"] == "cannot count here: C: ENOENT (No such file or directory)"
    assert why["sched"] == "runs here"  # software events open everywhere
    assert lines[1] == " 0: 'default', nothing counts here  [" + why["default"] + "]"


def test_list_events_software_and_unsupported() -> None:
    r = run("--list-events")
    assert r.returncode == 0, r.stderr
    status = {}
    for line in r.stdout.splitlines():
        if line.startswith("  "):
            name, _, rest = line.strip().partition(" ")
            status[name] = rest.strip()
    for sw in ("task-clock", "page-faults", "context-switches", "cpu-migrations"):
        assert status[sw] == "available", (sw, status[sw])
    if hardware_pmu_error() is None:
        assert status["cycles"] == "available"
        # bus-cycles is not supported by this CPU (AMD) / VM: its errno is shown.
        if status["bus-cycles"] != "available":
            assert re.match(r"E[A-Z]+ \(", status["bus-cycles"]), status["bus-cycles"]
    else:
        assert status["cycles"].startswith(hardware_pmu_error() or "?")


def test_check_report(tmp_path: Path) -> None:
    (tmp_path / ".tiptoprc").write_text(NO_PMU_RC)
    r = run("-W", str(tmp_path), "--check")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    assert f"perf_event_paranoid: {paranoid}\n" in out
    pmus = sorted(os.listdir("/sys/bus/event_source/devices"))
    assert f"PMUs in sysfs: {', '.join(pmus)}\n" in out
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert f"open files limit: soft {soft}, hard {hard} " in out
    assert re.search(r"; \d+ open now\)\n", out)
    # CPUs and memory (psutil) against the kernel's own files: sysfs topology, meminfo.
    cpus = Path("/sys/devices/system/cpu")
    cores = {
        (t.joinpath("physical_package_id").read_text(), t.joinpath("core_id").read_text())
        for t in cpus.glob("cpu[0-9]*/topology")
    }
    mem_kib = next(
        int(x.split()[1])
        for x in Path("/proc/meminfo").read_text().splitlines()
        if x.startswith("MemTotal:")
    )
    want = f"CPUs: {os.cpu_count()} logical, {len(cores)} physical cores; "
    assert f"{want}memory: {mem_kib / 2**20:.1f} GiB\n" in out
    assert "   0 default: cannot count here: C: ENOENT" in out
    assert re.search(r"^ +\d+ sched: runs here$", out, re.M)
    hw = "yes" if hardware_pmu_error() is None else "no: "
    assert f"hardware counters (cycles): {hw}" in out
    assert "software counters (task-clock): yes" in out
    assert out.splitlines()[-1].startswith("to get more: ")


@pytest.mark.parametrize("ext", ["yaml", "xml"])
def test_export_then_load_gives_same_screens(tmp_path: Path, ext: str) -> None:
    (tmp_path / "rc").mkdir()
    (tmp_path / "rc" / ".tiptoprc").write_text(NO_PMU_RC)
    out = tmp_path / f"screens.{ext}"
    r = run("-W", str(tmp_path / "rc"), "--export", str(out))
    assert r.returncode == 0 and r.stdout == f"screens written to {out}\n", r.stderr
    before = run("-W", str(tmp_path / "rc"), "--list-screens").stdout
    after = run("-W", str(out), "--list-screens").stdout
    only = run("-W", str(out), "--only-conf", "--list-screens").stdout
    assert before.count("\n") >= 6
    assert after == before and only == before
    # And the screens themselves, not only their names: load both in-process.
    from tiptop.cli import load_screens

    a = load_screens(str(tmp_path / "rc")).screens
    b = load_screens(str(out)).screens
    key = [
        (
            s.name,
            s.desc,
            [(c.alias, c.event) for c in s.counters],
            [(c.header, c.format, c.expr) for c in s.columns],
        )
        for s in a
    ]
    assert key == [
        (
            s.name,
            s.desc,
            [(c.alias, c.event) for c in s.counters],
            [(c.header, c.format, c.expr) for c in s.columns],
        )
        for s in b
    ]


def test_export_write_error_is_one_line() -> None:
    r = run("--export", "/proc/nope/screens.xml")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "cannot write '/proc/nope/screens.xml'" in r.stderr


@pytest.mark.parametrize("argv", [["-h"], ["-v"], ["--version"], ["--list-screens"]])
def test_closed_stdout_is_quiet(argv: list[str]) -> None:
    """Output into a pipe nobody reads (``tiptop -h | true``): status 0, nothing on stderr
    (BrokenPipeError is an OSError: it must not be reported as a file error)."""
    r_end, w_end = os.pipe()
    os.close(r_end)
    try:
        r = subprocess.run(
            [*TIPTOP, *argv], stdout=w_end, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(w_end)
    assert (r.returncode, r.stderr) == (0, "")


def test_non_utf8_arguments_are_shown_as_escapes(tmp_path: Path) -> None:
    """A ``-p`` name from non-UTF-8 bytes, in a strict UTF-8 locale (not the C locale,
    where Python would escape by itself): the preamble shows the byte as an escape, as a
    task's name is shown (``tiptop.outside``), no error."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    argv = [*TIPTOP, "-b", "-n", "1", "-d", "0.01", "-S", "sched", "-p", os.fsdecode(b"\xff")]
    r = subprocess.run(argv, capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"only pid '\\xff'\n" in r.stdout
    out = tmp_path / "x.txt"
    r = subprocess.run([*argv, "-o", str(out)], capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"only pid '\\xff'\n" in out.read_bytes()


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        ("/root", "-W: '/root/.tiptoprc': Permission denied"),
        ("/root/.tiptoprc", "-W: '/root/.tiptoprc': Permission denied"),
        ("/etc/shadow", "/etc/shadow: cannot read: Permission denied"),
    ],
)
def test_unreadable_w_is_said_not_skipped(root_only: None, where: str, fragment: str) -> None:
    """As uid 65534, a ``-W`` the user cannot reach is one line naming the real reason,
    never "does not exist" nor a run without the file."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if not os.path.isdir("/root") or os.stat("/root").st_mode & 0o005:
        pytest.skip("/root is searchable by others here")
    cmd, env = nobody_command(["-m", "tiptop", "-W", where, "-b", "-n", "1", "-S", "sched"])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/tmp", timeout=60)
    assert r.returncode in (1, 2) and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == [f"tiptop: {fragment}"]


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "/dev/stdin"])
def test_w_that_is_not_a_file_is_one_line(tmp_path: Path, what: str) -> None:
    """``-W`` naming a device, a FIFO (which would block) or stdin (here /dev/null) is
    refused with one line, never skipped in silence (issue 15, item 7)."""
    if what == "fifo":
        what = str(tmp_path / "fifo")
        os.mkfifo(what)
    r = run("-W", what, "--list-screens", timeout=20)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == f"tiptop: -W: '{what}' is neither a directory nor a regular file\n"


def test_w_directory_without_rc_is_said(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TIPTOP", "XDG_CONFIG_HOME")}
    r = run("-W", str(tmp_path), "--list-screens", cwd=tmp_path, env={**env, "HOME": "/"})
    assert r.returncode == 0 and r.stdout.startswith("Available screens:"), r.stderr
    assert r.stderr == f"tiptop: -W: no .tiptoprc in '{tmp_path}': looking further\n"


def test_another_users_unreadable_dot_tiptoprc_is_skipped_and_said(root_only: None) -> None:
    """A mode-000 ``./.tiptoprc`` of root's, run as uid 65534: skipped as the original
    skips it (it stopped tiptop), with one line saying so (issue 15, item 7)."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    where = Path(tempfile.mkdtemp(prefix="tiptop-rc-"))
    try:
        where.chmod(0o755)
        (where / ".tiptoprc").write_text(NO_PMU_RC)
        (where / ".tiptoprc").chmod(0)
        cmd, env = nobody_command(["-m", "tiptop", "--list-screens"])
        env.pop("TIPTOP", None)
        env.pop("XDG_CONFIG_HOME", None)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=where, timeout=60)
    finally:
        shutil.rmtree(where)
    assert r.returncode == 0 and r.stdout.startswith("Available screens:"), r.stderr
    assert "nothing counts here" not in r.stdout
    assert r.stderr == f"tiptop: '{where}/.tiptoprc': no permission to read it: skipped\n"
