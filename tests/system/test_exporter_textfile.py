"""``tiptop --textfile`` for real (issues 31 and 37): a device node, a FIFO, a planted
symlink or a missing directory at PATH is refused with one line and left as it was; a
write that fails leaves the exporter serving, is said once, and its end once; a run that
never wrote exits 1."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP, nobody_command
from tests.system.exporter_support import samples, scrape, serving, wait_for


def _unchanged(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_mode, st.st_rdev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_a_device_node_and_a_fifo_are_refused_and_left_as_they_were(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.prom"
    os.mkfifo(fifo)
    paths = [fifo]
    node = tmp_path / "null.prom"
    try:  # a character device with /dev/null's numbers (mknod(2) needs CAP_MKNOD)
        os.mknod(node, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        paths.append(node)
    except PermissionError:
        print("mknod(2) not permitted here: the FIFO only")
    kinds = {fifo: "a FIFO", node: "a character device"}
    for path in paths:
        before = _unchanged(os.lstat(path))
        argv = [*TIPTOP, "--textfile", str(path), "-S", "sched", "-d", "0.2", "-n", "2"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert r.stderr.splitlines() == [
            f"tiptop: --textfile {path}: {kinds[path]}, not a regular file: refused"
        ]
        assert _unchanged(os.lstat(path)) == before
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in paths)  # no temporary file
    odd = tmp_path / "metrics.txt"  # written, but node_exporter would not read it
    r = subprocess.run(
        [*TIPTOP, "--textfile", str(odd), "-S", "sched", "-d", "0.2", "-n", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "tiptop_cpu_seconds_total" in odd.read_text()
    assert r.stderr.splitlines() == [
        f"tiptop: --textfile {odd}: node_exporter's textfile collector reads only *.prom files"
    ]
    odd.unlink()
    if len(paths) == 1:
        pytest.skip("the device node part needs mknod(2) (CAP_MKNOD); the FIFO passed")


def test_a_failed_write_keeps_the_exporter_serving(tmp_path: Path) -> None:
    folder = tmp_path / "textfiles"
    folder.mkdir()
    out = folder / "m.prom"
    with serving("-S", "sched", "-d", "0.3", "--textfile", str(out)) as (proc, address):
        lines: list[str] = []
        assert proc.stderr is not None
        stderr = proc.stderr
        reader = threading.Thread(target=lambda: lines.extend(stderr), daemon=True)
        reader.start()
        wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
        end = time.monotonic() + 30
        while not out.exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert "tiptop_cpu_seconds_total" in out.read_text()
        while not stat.S_ISFIFO(os.lstat(out).st_mode):  # a FIFO put at PATH meanwhile
            with contextlib.suppress(FileNotFoundError, FileExistsError):
                out.unlink()
                os.mkfifo(out)
        first = samples(scrape(address))
        time.sleep(2)  # several refreshes, each failing to write
        second = samples(scrape(address))
        cpu = [k for k in second if k[0] == "tiptop_cpu_seconds_total" and k in first]
        assert any(second[k] > first[k] for k in cpu)  # refreshes went on
        assert proc.poll() is None
        assert stat.S_ISFIFO(os.lstat(out).st_mode)  # left as it was
        out.unlink()
        while not out.exists() and time.monotonic() < end + 30:
            time.sleep(0.1)
        assert "tiptop_cpu_seconds_total" in out.read_text()
        time.sleep(1)
    reader.join(timeout=10)  # stderr ends with the process
    assert [line.rstrip("\n") for line in lines] == [
        f"tiptop: --textfile {out}: not written (a FIFO, not a regular file: refused); "
        "carrying on, trying again at each refresh",
        f"tiptop: --textfile {out}: written again",
    ]


def _textfile_run(path: Path, as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    args = ["--textfile", str(path), "-S", "sched", "-d", "0.2", "-n", "2"]
    argv, env = [*TIPTOP, *args], None
    if as_nobody:
        argv, env = nobody_command(["-m", "tiptop", *args])
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


def test_a_planted_symlink_is_never_written_through(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # sticky and world-writable, as /tmp
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o600)
    before = _unchanged(os.stat(victim))
    link = shared / "node.prom"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)  # planted by another user
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (shared / "dir").symlink_to(private)
    os.lchown(shared / "dir", 65534, 65534)
    for path, why in (
        (link, "a symlink (never followed), not a regular file: refused"),
        (
            shared / "dir" / "node.prom",
            f"its directory {shared}/dir is a symlink (never followed): refused",
        ),
        (tmp_path / "missing" / "node.prom", f"no directory {tmp_path}/missing"),
    ):
        r = _textfile_run(path)
        assert r.returncode == 2, r.stderr
        assert r.stderr.splitlines() == [f"tiptop: --textfile {path}: {why}"]
    assert _unchanged(os.stat(victim)) == before and victim.read_text() == "precious\n"
    assert os.listdir(private) == [] and sorted(os.listdir(shared)) == ["dir", "node.prom"]


def test_a_run_that_never_wrote_exits_1() -> None:
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv(1) to run the exporter as nobody")
    folder = Path(tempfile.mkdtemp(prefix="tiptop-ro-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)  # nobody may read it, not write in it
        path = folder / "node.prom"
        r = _textfile_run(path, as_nobody=True)
        assert r.returncode == 1, r.stderr
        textfile = [line for line in r.stderr.splitlines() if "--textfile" in line]
        assert textfile == [
            f"tiptop: --textfile {path}: not written (Permission denied); carrying on, "
            "trying again at each refresh",
            f"tiptop: --textfile {path}: never written (2 tries)",
        ]
        assert os.listdir(folder) == []
    finally:
        shutil.rmtree(folder)
