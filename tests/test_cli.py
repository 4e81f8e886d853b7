"""The command as a user runs it (subprocess): one line + exit code for every user error,
no traceback; -h/-v/--version answer without probing the PMU."""

from __future__ import annotations

import subprocess
import sys

import pytest

TIPTOP = [sys.executable, "-m", "tiptop"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TIPTOP, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["-d", "0.001"], 2, "delay must be at least 0.01"),
        (["-d"], 2, "missing value after -d"),
        (["-bi", "-q"], 2, "unknown option '-q'"),
        (["--nope"], 2, "unknown option '--nope'"),
        (["--"], 2, "no command after --"),
        (["-u", "no_such_user_zz"], 2, "user name 'no_such_user_zz' does not exist"),
        (["-n", "many"], 2, "not a whole number"),
        (["--format=xml"], 2, "not one of text, csv, json"),
        (["-W", "/nonexistent/dir"], 2, "does not exist"),
        (["--export", "/tmp/screens.txt"], 2, "must end in .yaml"),
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
