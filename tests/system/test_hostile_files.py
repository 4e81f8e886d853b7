"""Recordings and textfiles among files another user plants (issue 52, item 5;
/work/shared/attacks/record_lock.sh, two_gz_recorders.sh, textfile_intermediate_link.sh), as
root against uid 65534's files in a sticky directory; and a file system without locks,
through a preloaded ``flock`` that fails with ENOLCK as on NFS without lockd (the attack's
own shim, built here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.system.hostile import as_nobody, needs_root, run_measured, shared_dir

#: The attack's shim (noflock.c): flock(2) fails as on a file system without locks.
NOFLOCK = """#include <errno.h>
int flock(int fd, int op) { (void)fd; (void)op; errno = ENOLCK; return -1; }
"""


def test_record_refuses_a_file_another_user_planted() -> None:
    """record_lock.sh (5b): uid 65534's empty 0644 file at the name: root's recording
    (70 task facts, every user's command lines) went into it, readable by that user."""
    needs_root()
    with shared_dir("tiptop-rec-") as sticky:
        planted = sticky / "shared.jsonl"
        as_nobody("sh", "-c", f"umask 022; : > {planted}")
        r = run_measured(
            ["-b", "-S", "sched", "-n", "2", "-c", "--record", str(planted), "-o", "/dev/null"]
        )
        assert r.rc == 1, r
        assert r.err == (
            f"tiptop: --record: '{planted}' belongs to uid 65534, not to this user: not "
            "written (it would hold every task's command line; name a file of your own)\n"
        )
        assert planted.stat().st_size == 0


def test_two_recorders_where_flock_fails_are_both_refused(tmp_path: Path) -> None:
    """record_lock.sh (4): with flock failing (ENOLCK), two .gz recorders ran unseen and
    the file kept 2-8 of 300 refreshes; now each is refused with one line, status 2."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the flock shim")
    (tmp_path / "noflock.c").write_text(NOFLOCK)
    shim = tmp_path / "noflock.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(tmp_path / "noflock.c")], check=True
    )
    path = tmp_path / "nfs.jsonl.gz"
    argv = [
        "-b",
        "-S",
        "sched",
        "-d",
        "0.02",
        "-n",
        "150",
        "--record",
        str(path),
        "-o",
        "/dev/null",
    ]
    runs = [run_measured(argv, env={"LD_PRELOAD": str(shim)}) for _ in range(2)]
    for r in runs:
        assert r.rc == 2, r
        assert r.err == (
            f"tiptop: --record: '{path}' cannot be locked here (flock: ENOLCK): not written "
            "(a second recorder could not be kept out; record to a local file system)\n"
        ), r.err
    assert path.stat().st_size == 0


def test_textfile_follows_no_link_in_an_earlier_component() -> None:
    """textfile_intermediate_link.sh: uid 65534's link sticky2/d -> a root-only 0700
    directory with a subdirectory; with fs.protected_symlinks at 0 root's
    ``--textfile sticky2/d/sub/planted.prom`` wrote there."""
    needs_root()
    with shared_dir("tiptop-tf-") as sticky, tempfile.TemporaryDirectory() as private:
        victim = Path(private)
        (victim / "sub").mkdir()
        as_nobody("ln", "-s", str(victim), str(sticky / "d"))
        path = sticky / "d" / "sub" / "planted.prom"
        r = run_measured(["--textfile", str(path), "-S", "sched", "-d", "0.2", "-n", "1"])
        assert r.rc == 2, r
        assert r.err == (
            f"tiptop: --textfile {path}: its directory {sticky / 'd'} is a symlink (never "
            "followed): refused\n"
        ), r.err
        assert not os.listdir(victim / "sub")
