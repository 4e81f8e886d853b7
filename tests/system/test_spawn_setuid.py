"""``tiptop -- cmd`` with a set-user-ID program, as an unprivileged user: its counters end
at its exec (fs/exec.c begin_new_exec()), so its cells are '?' with one line saying why,
not zeros shown as valid. As root nothing changes (the exec changes no credentials)."""

from __future__ import annotations

import csv
import io
import os
import shutil
import stat
import subprocess

import pytest

from tests.helpers import nobody_command
from tiptop.spawn import changes_credentials

PASSWD = shutil.which("passwd")


def setuid_root(path: str | None) -> bool:
    if path is None:
        return False
    st = os.stat(path)
    return bool(st.st_mode & stat.S_ISUID) and st.st_uid == 0


def test_changes_credentials_names_the_program() -> None:
    if not setuid_root(PASSWD):
        pytest.skip("no set-user-ID root passwd(1) here")
    line = changes_credentials(["passwd", "-S"], 65534, 65534)
    assert line is not None and line.startswith("'passwd' is set-user-ID")
    assert changes_credentials(["passwd", "-S"], 0, 0) is None  # root: no change at exec
    assert changes_credentials(["sleep", "1"], 65534, 65534) is None


def test_setuid_command_shows_question_marks_and_why(root_only: None) -> None:
    if not setuid_root(PASSWD) or shutil.which("setpriv") is None:
        pytest.skip("needs a set-user-ID root passwd(1) and setpriv")
    args = [
        "-m",
        "tiptop",
        "-b",
        "--format",
        "csv",
        "-S",
        "sched",
        "-d",
        "0.5",
        "--",
        "passwd",
        "-S",
    ]
    cmd, env = nobody_command(args)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/tmp", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "'passwd' is set-user-ID: the kernel ends a task's counters" in r.stderr
    # passwd -S prints its own line on the same stdout: keep tiptop's records only.
    lines = r.stdout.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("timestamp,"))
    n = lines[head].count(",")
    ours = [lines[head]] + [x for x in lines[head + 1 :] if x.count(",") == n]
    rows = list(csv.DictReader(io.StringIO("\n".join(ours))))
    assert rows, r.stdout
    for row in rows:
        assert row["TC_delta"] == "" and row["PF_delta"] == "", row
        assert row["%TASK_status"] == "unreadable", row
